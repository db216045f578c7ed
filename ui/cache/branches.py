"""Cached branches of the inspector's completion and HumanEval's tests on a text.

A branch, an exploration of the most uncertain fork points and a test run are ``st.cache_data`` keyed by the
trunk's exact ids and the settings: the same branch asked again (another tab, a rerun) never runs the model,
and the same text never runs HumanEval's tests twice.
"""

from __future__ import annotations

import streamlit as st

from asc import Completion, Explanation, explain_completion
from asc.branching import Branch, BranchRequest, ExploreRequest, ForkPoints, ForkSettings, TestRun
from ui.cache.models import completion_key, get_bundle


def _forks_key(forks: ForkPoints) -> tuple[bytes, bytes, bytes, ForkSettings]:
    return forks.is_fork.tobytes(), forks.margin.tobytes(), forks.entropy.tobytes(), forks.settings


@st.cache_data(max_entries=64, show_spinner=False, hash_funcs={Completion: completion_key})
def cached_branch(spec: str, trust_remote_code: bool, trunk: Completion, request: BranchRequest, aggregate: str,
                  device: str = "auto", dtype: str = "auto") -> tuple[Branch, Explanation]:
    """``request`` (:class:`asc.branching.BranchRequest`: the K-th choice or a typed text at a token) run on ``trunk``,
    and the branch's AsC-Eval on its exact ids."""
    bundle = get_bundle(spec, trust_remote_code, device, dtype)
    br = request.run(bundle, trunk)
    return br, explain_completion(bundle, br.completion, language=request.decoding.language, aggregate=aggregate)


@st.cache_data(max_entries=16, show_spinner=False, hash_funcs={Completion: completion_key, ForkPoints: _forks_key})
def cached_explore(spec: str, trust_remote_code: bool, trunk: Completion, forks: ForkPoints, request: ExploreRequest,
                   aggregate: str, device: str = "auto", dtype: str = "auto") -> list[tuple[Branch, Explanation]]:
    """``request`` (:class:`asc.branching.ExploreRequest`: the N most uncertain fork points, batched) run on
    ``trunk``, with each branch's AsC-Eval."""
    bundle = get_bundle(spec, trust_remote_code, device, dtype)
    language = request.decoding.language
    return [(br, explain_completion(bundle, br.completion, language=language, aggregate=aggregate))
            for br in request.run(bundle, trunk, forks)]


@st.cache_data(max_entries=64, show_spinner="Running HumanEval's tests...")
def cached_tests(text: str) -> TestRun:
    """HumanEval's tests on ``text`` (``asc.branching.humaneval.run_tests``), once per text."""
    from asc.branching import run_tests

    return run_tests(text)
