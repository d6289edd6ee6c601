package main

import (
	"context"
	"database/sql"
	"fmt"
	"os/exec"
)

func query(ctx context.Context, db *sql.DB, name string) {
	// ruleid: reviewflow-go-sql-injection
	db.Query(fmt.Sprintf("SELECT * FROM users WHERE name = '%s'", name))
	// ruleid: reviewflow-go-sql-injection
	db.ExecContext(ctx, "DELETE FROM users WHERE name = '"+name+"'")
	q := fmt.Sprintf("SELECT * FROM t WHERE n = '%s'", name)
	// ruleid: reviewflow-go-sql-injection
	db.QueryRow(q)
	// ok: reviewflow-go-sql-injection
	db.Query("SELECT * FROM users WHERE name = $1", name)
	// ok: reviewflow-go-sql-injection
	db.Exec("DELETE FROM sessions")
}

func run(ctx context.Context, file string) {
	// ruleid: reviewflow-go-command-injection
	exec.Command("sh", "-c", "tar xf "+file).Run()
	// ruleid: reviewflow-go-command-injection
	exec.CommandContext(ctx, "bash", "-c", fmt.Sprintf("grep %s log.txt", file)).Run()
	// ok: reviewflow-go-command-injection
	exec.Command("tar", "xf", file).Run()
	// ok: reviewflow-go-command-injection
	exec.Command("sh", "-c", "ls -l | wc -l").Run()
}
