"""The only part of attnviz that imports streamlit: caches, the sidebar, shared widgets."""
