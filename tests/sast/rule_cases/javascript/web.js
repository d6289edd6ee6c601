const fs = require("fs");
const path = require("path");
const express = require("express");
const axios = require("axios");

const app = express();

app.get("/files/:name", (req, res) => {
  // ruleid: reviewflow-js-path-traversal
  const body = fs.readFileSync(path.join("/srv/files", req.params.name));
  // ruleid: reviewflow-js-path-traversal
  res.sendFile("/srv/files/" + req.query.file);
  // ok: reviewflow-js-path-traversal
  const safe = fs.readFileSync(path.join("/srv/files", path.basename(req.params.name)));
  // ok: reviewflow-js-path-traversal
  res.sendFile(req.query.file, { root: "/srv/files" });
  res.send(body + safe);
});

app.get("/proxy", async (req, res) => {
  const target = req.query.url;
  // ruleid: reviewflow-js-ssrf
  const page = await fetch(target);
  // ruleid: reviewflow-js-ssrf
  const other = await axios.get("http://" + req.body.host + "/hook");
  // ok: reviewflow-js-ssrf
  const status = await fetch("https://status.example.invalid/health");
  res.send([page, other, status]);
});

function render(el, comment) {
  // ruleid: reviewflow-js-xss
  el.innerHTML = "<p>" + comment + "</p>";
  // ruleid: reviewflow-js-xss
  document.write(comment);
  // ruleid: reviewflow-js-xss
  el.insertAdjacentHTML("beforeend", comment);
  // ok: reviewflow-js-xss
  el.textContent = comment;
  // ok: reviewflow-js-xss
  el.innerHTML = "<p>loading</p>";
  // ok: reviewflow-js-xss
  el.innerHTML = DOMPurify.sanitize(comment);
}
