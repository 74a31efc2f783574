"""`python -m attnviz.bench`: the performance figures each issue names."""
