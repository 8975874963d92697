"""Which known downstreams a provider change breaks (`apiaudit impact OLD NEW`).

For every downstream of a list (`downstream.py`), the findings the NEW provider has and the OLD
one has not (the `--against` upgrade delta, through `audit.scan`: no second engine), each tied to
the provider change that causes it (`cause.py`), seen by downstream and by provider change
(`results.py`), and rendered for a provider's pull request (`render.py`, `sarif.py`).
"""
