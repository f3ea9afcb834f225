"""Transports only move probe frames: local subprocess, SSH (asyncssh), the Kubernetes API (kube: exec
into a pod, kubeexec: its stream). The demo's, a local one over a simulated node, is the simulator's (sim/transport.py)."""
