"""Placeholder: being built this session (issue 13)."""
import streamlit as st

st.info("This page is being built.")
