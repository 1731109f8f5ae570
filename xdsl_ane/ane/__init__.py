"""The target: what is a fact about Apple's Neural Engine, not a pass.

- chips.py: each chip's ANE (peak, dimension limits, SRAM, what it runs),
  `DEFAULT_CHIP`;
- limits.py: the limits every pass, builder and frontend stays within (the
  dimension limits from the chip table);
- rules.py: the rules that keep an op off the ANE, read by `ane-lint` and
  by the placement of the estimate (`passes/placement.py`);
- cost.py: how an op's FLOPs are counted.

Below the dialects: each mil op states its own rules and FLOPs with these
(`MilOp.ANE_RULES`, `MilOp.flops`); the facts read an op's name, properties
and types, and import nothing of the compiler but `errors`.
"""
