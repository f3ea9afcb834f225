"""Transports only move probe frames: local subprocess, SSH (asyncssh), demo."""
