const crypto = require("crypto");
const serialize = require("node-serialize");
const yaml = require("js-yaml");

function load(cookie, text, expr) {
  // ruleid: reviewflow-js-unsafe-deserialization
  const session = serialize.unserialize(cookie);
  // ruleid: reviewflow-js-unsafe-deserialization
  const value = eval(expr);
  // ruleid: reviewflow-js-unsafe-deserialization
  const fn = new Function("a", expr);
  // ruleid: reviewflow-js-unsafe-deserialization
  const doc = yaml.load(text, { schema: yaml.DEFAULT_FULL_SCHEMA });
  // ok: reviewflow-js-unsafe-deserialization
  const parsed = JSON.parse(cookie);
  // ok: reviewflow-js-unsafe-deserialization
  const plain = yaml.load(text);
  // ok: reviewflow-js-unsafe-deserialization
  const constant = eval("1 + 1");
  return [session, value, fn, doc, parsed, plain, constant];
}

function digest(password, key, iv) {
  // ruleid: reviewflow-js-weak-crypto
  const h = crypto.createHash("md5").update(password).digest("hex");
  // ruleid: reviewflow-js-weak-crypto
  const c = crypto.createCipheriv("des-ede3-cbc", key, iv);
  // ruleid: reviewflow-js-weak-crypto
  const e = crypto.createCipheriv("aes-128-ecb", key, null);
  // ruleid: reviewflow-js-weak-crypto
  const old = crypto.createCipher("aes192", password);
  // ok: reviewflow-js-weak-crypto
  const good = crypto.createHash("sha256").update(password).digest("hex");
  // ok: reviewflow-js-weak-crypto
  const gcm = crypto.createCipheriv("aes-256-gcm", key, iv);
  return [h, c, e, old, good, gcm];
}

// ruleid: reviewflow-js-hardcoded-secret
const STRIPE_API_KEY = "sk_live_4f9a8b7c6d5e4f3a";
// ruleid: reviewflow-js-hardcoded-secret
const config = { password: "hunter2-but-longer" };
// ok: reviewflow-js-hardcoded-secret
const apiKey = process.env.API_KEY;
// ok: reviewflow-js-hardcoded-secret
const PASSWORD_FIELD = "password";
// ok: reviewflow-js-hardcoded-secret
const defaults = { password: "changeme" };
