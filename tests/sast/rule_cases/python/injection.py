import commands
import os
import subprocess


def sql(cursor, name, session):
    # ruleid: reviewflow-python-sql-injection
    cursor.execute(f"SELECT * FROM users WHERE name = '{name}'")
    # ruleid: reviewflow-python-sql-injection
    cursor.execute("SELECT * FROM users WHERE name = '%s'" % name)
    # ruleid: reviewflow-python-sql-injection
    cursor.executemany("DELETE FROM t WHERE id = '" + name + "'", [])
    query = "SELECT * FROM users WHERE name = '{}'".format(name)
    # ruleid: reviewflow-python-sql-injection
    cursor.execute(query)
    # ok: reviewflow-python-sql-injection
    cursor.execute("SELECT * FROM users WHERE name = %s", (name,))
    # ok: reviewflow-python-sql-injection
    cursor.execute("SELECT 1")
    # ok: reviewflow-python-sql-injection
    session.execute(select_users, {"name": name})


def command(user_input):
    # ruleid: reviewflow-python-command-injection
    os.system("ls " + user_input)
    # ruleid: reviewflow-python-command-injection
    os.popen(f"cat {user_input}")
    # ruleid: reviewflow-python-command-injection
    commands.getoutput(user_input)
    # ok: reviewflow-python-command-injection
    os.system("ls -l")
    # ok: reviewflow-python-command-injection
    subprocess.run(["ls", user_input])


def shell(user_input):
    # ruleid: reviewflow-python-subprocess-shell-true
    subprocess.run("grep " + user_input + " log.txt", shell=True)
    # ruleid: reviewflow-python-subprocess-shell-true
    subprocess.check_output(f"tar xf {user_input}", shell=True, text=True)
    # ok: reviewflow-python-subprocess-shell-true
    subprocess.run(["grep", user_input, "log.txt"])
    # ok: reviewflow-python-subprocess-shell-true
    subprocess.run("ls -l | wc -l", shell=True)
    # ok: reviewflow-python-subprocess-shell-true
    subprocess.run(user_input, shell=False)
