const { exec, execSync, spawn } = require("child_process");
const childProcess = require("child_process");

async function sql(db, id, name) {
  // ruleid: reviewflow-js-sql-injection
  await db.query(`SELECT * FROM users WHERE id = ${id}`);
  // ruleid: reviewflow-js-sql-injection
  await db.execute("DELETE FROM users WHERE name = '" + name + "'");
  const q = "SELECT * FROM t WHERE n = " + name;
  // ruleid: reviewflow-js-sql-injection
  await db.query(q);
  // ok: reviewflow-js-sql-injection
  await db.query("SELECT * FROM users WHERE id = ?", [id]);
  // ok: reviewflow-js-sql-injection
  await db.query(`SELECT * FROM users`);
}

function command(file, pattern) {
  // ruleid: reviewflow-js-command-injection
  exec("tar xf " + file, () => {});
  // ruleid: reviewflow-js-command-injection
  childProcess.execSync(`grep ${pattern} log.txt`);
  // ok: reviewflow-js-command-injection
  execSync("ls -l");
  // ok: reviewflow-js-command-injection
  /a+/.exec(pattern);
  // ok: reviewflow-js-command-injection
  childProcess.execFile("tar", ["xf", file]);
}

function shell(cmd, arg) {
  // ruleid: reviewflow-js-shell-true
  spawn(cmd, [arg], { shell: true });
  // ruleid: reviewflow-js-shell-true
  childProcess.execFileSync("convert " + arg, [], { shell: true, stdio: "inherit" });
  // ok: reviewflow-js-shell-true
  spawn("ls", ["-l"], { shell: true });
  // ok: reviewflow-js-shell-true
  spawn(cmd, [arg]);
}
