"""A tiny Streamlit app for the slow-run fade's test: the app's page scripts (ui.page.page_scripts, the fade
among them), a few lines, and a button whose run lasts `sleep` seconds (a quick run or a slow one)."""
import time

import streamlit as st

from attnviz.ui.page import page_scripts

page_scripts()
st.markdown("First line")
if st.button("Run", key="fade_run"):
    time.sleep(float(st.query_params.get("sleep", "2")))
st.markdown("Last line")
