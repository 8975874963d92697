from apiaudit.cli import main

main()
