"""Cached branches of the inspector's completion and HumanEval's tests on a text.

A branch, an exploration of the most uncertain fork points and a test run are ``st.cache_data`` keyed by the
trunk's exact ids and the settings: the same branch asked again (another tab, a rerun) never runs the model,
and the same text never runs HumanEval's tests twice.
"""

from __future__ import annotations

import streamlit as st

from asc import Explanation
from asc.branching.branches import Branch, branch, explore_forks
from asc.branching.forks import ForkPoints
from asc.branching.humaneval import TestRun
from asc.generate import Completion, explain_completion
from ui.cache.models import completion_key, get_bundle


def _forks_key(forks: ForkPoints) -> tuple:
    return forks.is_fork.tobytes(), forks.margin.tobytes(), forks.entropy.tobytes(), forks.settings


@st.cache_data(max_entries=64, show_spinner=False, hash_funcs={Completion: completion_key})
def cached_branch(spec: str, trust_remote_code: bool, trunk: Completion, at: int, choose: int | None,
                  token: str | None, max_new_tokens: int, temperature: float, top_p: float, seed: int, language: str,
                  aggregate: str, device: str = "auto", dtype: str = "auto") -> tuple[Branch, Explanation]:
    """:func:`asc.branching.branches.branch` of ``trunk`` at token ``at`` (the K-th choice or a typed text) and the branch's
    AsC-Eval on its exact ids."""
    bundle = get_bundle(spec, trust_remote_code, device, dtype)
    br = branch(bundle, trunk, at, choose=choose, token=token, max_new_tokens=max_new_tokens, temperature=temperature,
                top_p=top_p, seed=seed, language=language)
    return br, explain_completion(bundle, br.completion, language=language, aggregate=aggregate)


@st.cache_data(max_entries=16, show_spinner=False, hash_funcs={Completion: completion_key, ForkPoints: _forks_key})
def cached_explore(spec: str, trust_remote_code: bool, trunk: Completion, forks: ForkPoints, n: int,
                   max_new_tokens: int, temperature: float, top_p: float, seed: int, language: str, aggregate: str,
                   device: str = "auto", dtype: str = "auto") -> list[tuple[Branch, Explanation]]:
    """:func:`asc.branching.branches.explore_forks` (the ``n`` most uncertain fork points of the generated part, batched) with
    each branch's AsC-Eval."""
    bundle = get_bundle(spec, trust_remote_code, device, dtype)
    branches = explore_forks(bundle, trunk, forks, n, max_new_tokens, temperature=temperature, top_p=top_p, seed=seed,
                             language=language, generated_only=True)
    return [(br, explain_completion(bundle, br.completion, language=language, aggregate=aggregate)) for br in branches]


@st.cache_data(max_entries=64, show_spinner="Running HumanEval's tests...")
def cached_tests(text: str) -> TestRun:
    """HumanEval's tests on ``text`` (``asc.branching.humaneval.run_tests``), once per text."""
    from asc.branching.humaneval import run_tests

    return run_tests(text)
