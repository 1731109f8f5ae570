"""Rewrite passes between rlx and mil. Importing the package registers the
mil dialect's canonicalization patterns (`canonicalization`), which xDSL's
`canonicalize` runs."""

from xdsl_ane.passes import canonicalization  # noqa: F401  (registers patterns)
