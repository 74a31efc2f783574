"""attnviz: make attention in transformers visible. Core package (never imports streamlit)."""
