"""pages/study_admin.py, the researcher's results page: locked without the password, Table III with it."""

from streamlit.testing.v1 import AppTest

from tests.pages.helpers import page
from ui import study as ui_study


def test_study_results_page_needs_the_password(tiny_study, monkeypatch):
    admin = page("study_admin")
    at = AppTest.from_file(admin, default_timeout=120)
    at.run()
    assert any("ASC_STUDY_PASSWORD" in i.value for i in at.info) and not at.dataframe
    monkeypatch.setenv("ASC_STUDY_PASSWORD", "s3cret")
    at = AppTest.from_file(admin, default_timeout=120)
    at.run()
    at.text_input(key="study_pw").set_value("wrong").run()
    assert not at.dataframe and any("Wrong password" in e.value for e in at.error)
    _, _, store = ui_study.study()
    code = store.new_participant()
    store.consent(code)
    store.save_background(code, {"python": "Novice"})
    store.save_ratings(code, "a", {"useful": 5, "readable": 1, "comment": ""})
    at.text_input(key="study_pw").set_value("s3cret").run()
    assert not at.exception
    progress, table = at.dataframe[0].value, at.dataframe[1].value
    assert progress["assigned"].tolist() == [1]
    row = table[table["question"] == "useful"].iloc[0]
    assert row["n"] == 1 and row["Strongly agree"] == 100
