"""The parts of one module's walk (`consumer/visitor.py` builds them, wires them and runs them).

Each part is one concern; it holds the `WalkState` every part shares (`self.state`) and the
parts below it that it calls; imports go one way, earliest first:

    scopes       Env, Scope, ClassScope; liveness and how branches meet; what self.X holds
    state        WalkState (what the walk reads, and what it found); site_of, text_of
    evaluate     Evaluator: what an expression holds
    decide       Decider: a test, three-valued on the audited release
    fold         Folding: consumer guard helpers, defined, exported and folded at calls
    dicts        Dicts: the keys a dict holds as the code changes it
    record       Recorder: provider imports, and the uses, RPCs, injections and bindings at calls
    definitions  Definitions: function scopes and the class learning pass
    statements   Statements: statements in order, and whether the lines after each run

The walk is recursive across the parts: reading a value may decide a test or fold a helper,
and a function or class body is statements again. For those calls back up, a part holds the
part above it typed by a `Protocol` of what it asks (`Evaluator.tests`, `Evaluator.folding`,
`Decider.folding`, `Definitions.statements`): the visitor hands them over once every part
exists, and takes them back after the walk, so that reference counting frees it (the cyclic
collector is paused in forked workers). A part calls another through the attribute holding it
(`self.values.value(...)`): two specialised attribute loads, as cheap as a call on `self`.
"""
