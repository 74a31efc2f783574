"""AppTest: links restore the main settings of the analysis and complexity pages."""
import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import APP

CASES = [
    ("app_pages/rollout.py", {"ro_fusion": "max", "ro_residual": "0.2", "ro_layer": "2", "ro_target": "3"},
     {"ro_fusion": "max", "ro_residual": 0.2, "ro_layer": 2, "ro_target": 3}),
    ("app_pages/entropy.py", {"en_unit": "nats", "en_special": "0", "en_layer": "1", "en_head": "8"},
     {"en_unit": "nats", "en_special": False, "en_layer": 1, "en_head": 8}),
    ("app_pages/head_roles.py", {"hr_min": "0.7"}, {"hr_min": 0.7}),
    ("app_pages/head_roles.py", {"hr_pairs_layer": "3", "hr_pairs_head": "7", "hr_pairs_self": "1", "hr_pairs_k": "50"},
     {"hr_pairs_layer": 3, "hr_pairs_head": 7, "hr_pairs_self": True, "hr_pairs_k": 50}),
    ("app_pages/compare.py", {"cmp_layer": "3", "cmp_head": "5"}, {"cmp_layer": 3, "cmp_head": 5}),
    ("app_pages/complexity.py", {"cx_n": "4096", "cx_h": "16", "cx_d": "1024"}, {"cx_n": "4096", "cx_h": 16, "cx_d": 1024}),
    # widgets bound with Streamlit's own bind="query-params"
    ("app_pages/positional.py", {"pe_dmodel": "64", "pe_maxlen": "32"}, {"pe_dmodel": 64, "pe_maxlen": 32}),
]


@pytest.mark.parametrize("page,params,expected", CASES, ids=[c[0] for c in CASES])
def test_link_restores_page_settings(page, params, expected):
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params.update(params)
    at.run()
    at.switch_page(page)
    at.run()
    assert not at.exception, at.exception
    for key, value in expected.items():
        assert at.session_state[key] == value, key
    assert not [w for w in at.warning if "Session State" in w.value]
    # and the settings travel on in the URL
    for key, raw in params.items():
        assert at.query_params[key] in (raw, [raw]), key
