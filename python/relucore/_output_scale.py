"""``output_scale``: the factor c of ``h(x) = c sum_k a_k phi(w_k^T x + b_k)``, one rule for every call.

A positive finite float is c itself; the named rules ``"1/m"`` (the mean-field scaling) and
``"1/sqrt(m)"`` are c as a function of the width m. :func:`relucore.train`, :class:`relucore.Trainer`,
:func:`relucore.meanfield.train` and the sweep key take the same values.
"""

from __future__ import annotations

import math
from typing import Union

from relucore._validation import check_choice, check_positive

__all__ = ["OUTPUT_SCALE_RULES", "check_output_scale", "output_scale_value"]

#: The named rules, each c for m neurons.
OUTPUT_SCALE_RULES = {"1/m": lambda m: 1.0 / m, "1/sqrt(m)": lambda m: 1.0 / math.sqrt(m)}
#: The 0.x spellings of :func:`relucore.meanfield.train`, refused with their 1.0 value.
_OLD_RULES = {"1/N": '"1/m"', "1/sqrt(N)": '"1/sqrt(m)"', "1": "1.0"}


def check_output_scale(output_scale) -> Union[str, float]:
    """``output_scale`` checked: a named rule (returned as given) or a positive finite float."""
    if isinstance(output_scale, str):
        if output_scale in _OLD_RULES:
            raise ValueError(
                f"output_scale={output_scale!r} was renamed in 1.0: use output_scale={_OLD_RULES[output_scale]}"
            )
        check_choice(output_scale, "output_scale", tuple(OUTPUT_SCALE_RULES))
        return output_scale
    return check_positive(output_scale, "output_scale")


def output_scale_value(output_scale, m: int) -> float:
    """c for ``m`` neurons: the rule's value, or the float itself (checked)."""
    output_scale = check_output_scale(output_scale)
    return OUTPUT_SCALE_RULES[output_scale](m) if isinstance(output_scale, str) else output_scale
