"""`python -m attnviz.bench`."""
from attnviz.bench.run import main

if __name__ == "__main__":
    main()
