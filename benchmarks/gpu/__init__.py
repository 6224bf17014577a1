"""The GPU check: ``bash benchmarks/gpu/run.sh`` runs its steps (``python -m benchmarks.gpu.NAME``) on a
CUDA machine, or with ``--cpu`` as the dry run that CI runs."""
