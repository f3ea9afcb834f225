"""`pinscope exporter`: the latest NodeReport of each node as Prometheus metrics.

metrics.py turns one report into samples (the metrics contract, documented in docs/prometheus.md); serve.py
runs one reading loop per node on its own cadence and a prometheus_client HTTP server whose custom
collector only reads the samples of the latest reports (a scrape never waits for a node nor starts a read).
"""
