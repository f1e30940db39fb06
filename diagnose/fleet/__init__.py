"""Fleet mode: each node extracts its Frames to a shared dataset (Parquet, hive partitions by date, cluster and
node); ``diagnose fleet`` judges every node's Frames together, as one run over every node would.

    store.py     a local folder or an object-store URI; atomic writes
    schema.py    the versioned tables
    dataset.py   partitions, manifests (the atomic commit of a node), lazy scans
    service.py   the adapter over the pipeline's read and judge halves
    runs.py      extract one node; read and judge the fleet
    expert.py    expert load per node, then over the fleet
    fanout.py    the optional Ray runner: one extraction pinned to each node, then the fleet step
"""
