"""Rewrite passes between rlx and mil. The mil dialect's canonicalization
patterns, which xDSL's `canonicalize` runs, are registered by
`canonicalization.register()`, which the contexts for the mil ops call
(`canonicalization.knowing_mil`, `driver.make_context`, the universe's
`mil` entry)."""
