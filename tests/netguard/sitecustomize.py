"""Installed into test subprocesses through PYTHONPATH: no network beyond loopback."""

import netguard

netguard.install()
