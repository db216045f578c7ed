"""pages/sae.py, Syntax features, and the inspector's Features view (ui/features_view.py) on the tiny model."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tests.pages.helpers import TINY, button, charts, inspector, page

SAE_PAGE = page("sae")


@pytest.fixture(scope="module")
def tiny_sae(tmp_path_factory):
    """A TopK SAE of the tiny model trained, measured and enriched by the demo's job (a few hundred tokens)."""
    from probes.sae import sae_job
    from tests.support.models import tiny_random_model

    folder = tmp_path_factory.mktemp("runs") / "sae" / "tiny"
    sae_job(folder, train_corpus="humaneval", tokens=1024, width=32, k=4, limit=8, batch_size=256)(
        tiny_random_model(), lambda *_: None, lambda: False)
    return folder


def _runs(monkeypatch, tmp_path, sae=None):
    runs = tmp_path / "runs"
    if sae is not None:
        shutil.copytree(sae, runs / "sae" / sae.name)
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    monkeypatch.setenv("ASC_RUNS_DIR", str(runs))
    return runs


def _page(timeout=120):
    at = AppTest.from_file(SAE_PAGE, default_timeout=timeout)
    at.session_state["settings"] = TINY
    at.run()
    return at


def test_without_an_sae_the_page_offers_the_demo_and_the_command(monkeypatch, tmp_path):
    from ui import jobs

    _runs(monkeypatch, tmp_path)
    at = _page()
    assert not at.exception
    assert any("python -m probes sae train" in i.value for i in at.info)
    assert any(b.label == jobs.demo_label("sae") for b in at.button)


def test_a_tiny_sae_shows_quality_heatmap_ranking_dashboard_and_exports(monkeypatch, tmp_path, tiny_sae):
    from probes.sae import open_report
    from probes.sae.figures import heatmap_latents

    _runs(monkeypatch, tmp_path, tiny_sae)
    at = _page()
    assert not at.exception and not at.error
    metrics = {m.label: m.value for m in at.metric}
    report = open_report(tiny_sae)
    assert metrics["Variance explained"] == f"{report.quality['variance_explained']:.3f}"
    assert metrics["L0"] == f"{report.quality['l0']:.1f}"
    heat, hist = charts(at)[:2]
    assert heat["data"][0]["x"] == [f"#{i}" for i in heatmap_latents(report.enrichment)]
    assert heat["data"][0]["colorscale"] and heat["data"][0]["zmax"] == 1
    category = next(c for c in report.enrichment.categories if report.enrichment.ranked(c, 1))
    at.selectbox(key="sae_category").set_value(category).run()
    ranked = report.enrichment.ranked(category, 20)
    shown = at.dataframe[0].value
    assert shown["latent"].tolist() == [r["latent"] for r in ranked]
    latent = at.number_input(key="sae_latent_tiny").value
    card = report.card(int(latent))
    assert np.sum(hist["data"][0]["y"]) == card["fires"]
    page_html = "".join(h.proto.body for h in at.get("html"))
    assert f"Latent {latent}:" in page_html and "<mark" in page_html
    labels = {b.proto.label for b in at.get("download_button")}
    assert {"Enrichment (JSON)", "Enrichment (CSV)", "Heatmap (HTML)", "Dashboard (JSON)", "Dashboard (HTML)"} <= labels
    at.radio(key="sae_value").set_value("precision").run()
    assert not at.exception and charts(at)[0]["data"][0]["colorbar"]["title"]["text"] == "precision"


def test_a_latent_asked_in_the_address_opens_its_dashboard(monkeypatch, tmp_path, tiny_sae):
    _runs(monkeypatch, tmp_path, tiny_sae)
    at = AppTest.from_file(SAE_PAGE, default_timeout=120)
    at.session_state["settings"] = TINY
    at.query_params["sae"] = "tiny"
    at.query_params["latent"] = "5"
    at.run()
    assert not at.exception
    assert at.number_input(key="sae_latent_tiny").value == 5
    assert "Latent 5:" in "".join(h.proto.body for h in at.get("html"))


def test_a_folder_that_is_no_sae_gives_one_clear_message(monkeypatch, tmp_path, tiny_sae):
    runs = _runs(monkeypatch, tmp_path, tiny_sae)
    broken = runs / "sae" / "broken"
    broken.mkdir()
    (broken / "cfg.json").write_text("{not json")
    at = AppTest.from_file(SAE_PAGE, default_timeout=120)
    at.session_state["settings"] = TINY
    at.session_state["sae_pick"] = "broken"
    at.run()
    assert not at.exception
    assert len(at.error) == 1 and "has no sae_weights.safetensors: give an SAE folder" in at.error[0].value.replace("\\", "")
    shutil.rmtree(runs / "sae" / "tiny" / "activations")
    at.session_state["sae_pick"] = "tiny"
    at.run()
    assert not at.exception and "python -m probes sae enrich" in at.error[0].value.replace("\\", "")


def test_the_features_view_lists_the_nodes_latents(monkeypatch, tmp_path, tiny_sae, tiny):
    from asc import explain
    from probes.sae import features, load_sae

    _runs(monkeypatch, tmp_path, tiny_sae)
    at = inspector(monkeypatch)
    button(at, "Explain").click().run()
    assert not at.exception
    assert at.selectbox(key="features_sae").value == "tiny"
    at.selectbox(key="node_pick").set_value(4).run()
    assert not at.exception and not at.error
    ex = explain(tiny, at.text_area(key="code").value)
    want = features(load_sae(tiny_sae), ex, tiny).of(4)
    table = next(d.value for d in at.dataframe if "latent" in d.value.columns and "max" in d.value.columns)
    assert table["latent"].tolist() == [lat for lat, _ in want]
    np.testing.assert_allclose(table["max"].astype(float), [round(v, 4) for _, v in want])
    tokens = [c for c in table.columns if c not in ("latent", "label", "max")]
    assert len(tokens) == len(ex.alignment.tokens_of(4))
    np.testing.assert_allclose(table[tokens].max(axis=1).astype(float), table["max"].astype(float), atol=1e-4)
    assert any(b.label == f"Latent {want[0][0]}" for b in at.button)


def test_the_features_view_leaves_out_saes_of_other_models(monkeypatch, tmp_path):
    from probes.sae import save_sae
    from tests.probes.sae.conftest import random_sae

    runs = _runs(monkeypatch, tmp_path)
    save_sae(random_sae(8, model="someone/other-model"), runs / "sae" / "other")
    at = inspector(monkeypatch)
    button(at, "Explain").click().run()
    assert not at.exception
    assert any("None of the 1 SAE folders" in m.value for m in at.caption)
