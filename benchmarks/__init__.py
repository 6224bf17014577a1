"""Speed and quality benchmarks, a package run from the repository root: ``python -m benchmarks.NAME``
(``--help`` gives each one's options; ``README.md`` here is the index of questions, current answers and
history pages). What the scripts share is ``common.py`` (data, models, timing) and ``processes.py`` (child
processes); ``record.py`` writes a run into its history page. Not installed with the package."""
