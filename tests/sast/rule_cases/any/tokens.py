# ruleid: reviewflow-secret-token-format
AWS_ACCESS_KEY_ID = "AKIAIOSFODNN7EXAMPLQ"
# ruleid: reviewflow-secret-token-format
GITHUB = "ghp_0123456789abcdefghijABCDEFGHIJ012345"
# ruleid: reviewflow-secret-token-format
KEY = """-----BEGIN RSA PRIVATE KEY-----"""
# ok: reviewflow-secret-token-format
AWS_ACCESS_KEY_ID_ENV = "AWS_ACCESS_KEY_ID"
# ok: reviewflow-secret-token-format
PUBLIC = "-----BEGIN PUBLIC KEY-----"
