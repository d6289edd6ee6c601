import hashlib
import marshal
import pickle

import yaml
from Crypto.Cipher import AES, DES
from cryptography.hazmat.primitives.ciphers import modes


def load(blob, text):
    # ruleid: reviewflow-python-unsafe-deserialization
    obj = pickle.loads(blob)
    # ruleid: reviewflow-python-unsafe-deserialization
    data = yaml.load(text)
    # ruleid: reviewflow-python-unsafe-deserialization
    code = marshal.loads(blob)
    # ruleid: reviewflow-python-unsafe-deserialization
    other = yaml.load(text, Loader=yaml.Loader)
    # ok: reviewflow-python-unsafe-deserialization
    safe = yaml.safe_load(text)
    # ok: reviewflow-python-unsafe-deserialization
    also_safe = yaml.load(text, Loader=yaml.SafeLoader)
    # ok: reviewflow-python-unsafe-deserialization
    out = pickle.dumps(obj)
    return obj, data, code, other, safe, also_safe, out


def digest(password, key, data):
    # ruleid: reviewflow-python-weak-crypto
    h = hashlib.md5(password.encode()).hexdigest()
    # ruleid: reviewflow-python-weak-crypto
    s = hashlib.new("sha1", data)
    # ruleid: reviewflow-python-weak-crypto
    c = DES.new(key, DES.MODE_CBC)
    # ruleid: reviewflow-python-weak-crypto
    e = AES.new(key, AES.MODE_ECB)
    # ruleid: reviewflow-python-weak-crypto
    m = modes.ECB()
    # ok: reviewflow-python-weak-crypto
    g = hashlib.sha256(password.encode()).hexdigest()
    # ok: reviewflow-python-weak-crypto
    etag = hashlib.md5(data, usedforsecurity=False).hexdigest()
    # ok: reviewflow-python-weak-crypto
    a = AES.new(key, AES.MODE_GCM)
    return h, s, c, e, m, g, etag, a


# ruleid: reviewflow-python-hardcoded-secret
DB_PASSWORD = "s3cr3t-Pa55w0rd!"
# ruleid: reviewflow-python-hardcoded-secret
client = Client(api_key="sk-live-4f9a8b7c6d5e")
# ruleid: reviewflow-python-hardcoded-secret
settings = {"client_secret": "9f8e7d6c5b4a3210"}
# ok: reviewflow-python-hardcoded-secret
DB_PASSWORD_ENV = "DB_PASSWORD"
# ok: reviewflow-python-hardcoded-secret
api_key = os.environ["API_KEY"]
# ok: reviewflow-python-hardcoded-secret
password = "changeme-example"
# ok: reviewflow-python-hardcoded-secret
token_url = "https://auth.example.invalid/token"
