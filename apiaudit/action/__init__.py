"""The GitHub Action's script (action.yml at the repository root runs `python -m apiaudit.action`)."""
