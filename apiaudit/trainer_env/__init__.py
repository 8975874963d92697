"""Scripts the runner runs by path in another environment (the server line's trainer).

Nothing here imports apiaudit, and nothing in apiaudit imports these modules: they run
under `[train] python`, whose speculators (0.7+) is not the runner's, and the runner's
preflight audits them against that speculators (apiaudit.runner.pipeline).
"""
