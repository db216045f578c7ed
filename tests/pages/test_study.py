"""pages/study.py, the participant page: a participant completes the study and the answers are stored."""

from streamlit.testing.v1 import AppTest

from tests.pages.helpers import button, page
from ui import study as ui_study


def test_participant_completes_the_study_and_answers_are_stored(tiny_study):
    at = AppTest.from_file(page("study"), default_timeout=120)
    at.run()
    assert not at.exception
    button(at, "Start the study").click().run()
    code = at.query_params["code"]
    code = code[0] if isinstance(code, list) else code
    assert len(code) == 8
    button(at, "I agree and want to take part").click().run()
    at.radio(key="bg_python").set_value("Expert")
    at.get("form_submit_button")[0].click().run()
    assert any("Sample 1 of 2" in s.value for s in at.subheader)
    assert at.get("plotly_chart"), "the partial AST is shown to group S2"
    at.get("form_submit_button")[0].click().run()  # nothing rated: refused with the question named
    assert any("useful" in e.value.lower() for e in at.error)
    at.radio(key="r_a_useful").set_value(4)
    at.radio(key="r_a_readable").set_value(2)
    at.get("form_submit_button")[0].click().run()
    assert any("Sample 2 of 2" in s.value for s in at.subheader)
    at.radio(key="r_b_useful").set_value(5)
    at.radio(key="r_b_readable").set_value(5)
    at.text_area(key="c_b").set_value("nice tree")
    at.get("form_submit_button")[0].click().run()
    assert not at.exception
    # the study file gives no `thanks`: the definition's default text is shown, once, as the last page
    assert [s.value for s in at.success] == ["Thank you for taking part."]
    assert any(f"saved under the code {code}" in c.value for c in at.caption)
    _, _, store = ui_study.study()
    rows = store.responses()
    mine = rows[rows["code"] == code]
    assert sorted(mine["question_id"].tolist()) == sorted(["python", "useful", "readable", "comment"] * 1 +
                                                          ["useful", "readable", "comment"])
    assert set(mine[mine["sample_id"] == "b"]["value"].dropna()) == {"5", "nice tree"}
    assert store.state(code).finished
