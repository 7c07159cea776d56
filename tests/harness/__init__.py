"""Test harnesses that stand up real services (OpenSSH sshd fleets) for integration tests."""
