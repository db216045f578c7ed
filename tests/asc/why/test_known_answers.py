"""Known answers on the real SmolLM2: small functions whose target token is a name (or a literal) defined once above,
so the statement that defines it is what the prediction should rely on. The test: by_statement's first statement
(the target's own line ranked apart, asc.why.statements) is the defining one, with a positive value (it raised the
target).

Measured first (the method notes of docs/why.md give the table): occlusion passes on five of the six; gradient x input
and integrated gradients do not pass (gradient x input names the defining statement first on 2 of 6, both times
with a negative value; integrated gradients on 3, one negative), so only occlusion is asserted. The one occlusion
miss stays a strict expected failure.
"""

from __future__ import annotations

import pytest

from asc.explain import explain
from asc.why.attribute import attribute
from asc.why.statements import by_statement
from asc.why.targets import target_at

pytestmark = [pytest.mark.real, pytest.mark.slow]

# name: (source, the target's line, its word there (the last one on the line), the defining statement's line)
KNOWN = {
    "discounted": ('def scale_prices(prices, rate):\n    """Apply a discount rate to every price."""\n'
                   '    discounted = [p * (1 - rate) for p in prices]\n    print(len(prices))\n    return discounted\n',
                   5, "discounted", 3),
    "limit": ("def check():\n    limit = 7\n    count = 3\n    print(count)\n    return limit + 0 == 7\n", 5, "7", 2),
    "message": ('def greet(name):\n    message = "Hello, " + name\n    width = 80\n    log = []\n    return message\n',
                5, "message", 2),
    "secret": ("def answer():\n    secret = 42\n    other = 5\n    total = other * 2\n    assert secret == 42\n",
               5, "42", 2),
    "accumulator": ("def total_length(words):\n    accumulator = 0\n    for word in words:\n        print(word)\n"
                    "    return accumulator\n", 5, "accumulator", 2),
    "port": ('PORT_NUMBER = 8080\nHOST = "localhost"\nDEBUG = False\n\n\ndef url():\n'
             '    return HOST + ":" + str(PORT_NUMBER)\n', 7, "PORT", 1),
}
MISSES = {"port": "measured: occlusion ranks `def url():` first (+2.3) and `PORT_NUMBER = 8080` negative (-0.49); "
                  "SmolLM2 gives 'PORT' p = 0.10 there"}


def first_statement(bundle, name: str, method: str):
    """(line, value) of the statement ``method`` ranks first on snippet ``name``, the target's line apart."""
    source, line, word, _ = KNOWN[name]
    ex = explain(bundle, source)
    target = target_at(bundle, ex, line, source.split("\n")[line - 1].rindex(word) + 1)
    view = by_statement(attribute(bundle, source, target, method, explanation=ex))
    top = view.ranked(1, target_line=False)[0]
    return int(view.line[top]), float(view.value[top])


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=MISSES[n]))
                                  if n in MISSES else n for n in KNOWN])
def test_occlusion_ranks_the_defining_statement_first(smol, name):
    line, value = first_statement(smol, name, "occlusion")
    assert (line, value > 0) == (KNOWN[name][3], True), (name, line, value)
