package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/anteroom/anteroom/internal/loopback"
)

// pgBin finds a PostgreSQL server binary directory.
func pgBin() (string, error) {
	m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(m) == 0 {
		return "", fmt.Errorf("no PostgreSQL server (apt-get install postgresql)")
	}
	return filepath.Dir(m[len(m)-1]), nil
}

// asPostgres runs a PostgreSQL binary, as the postgres user when root
// (initdb refuses to run as root).
func asPostgres(bin string, args ...string) *exec.Cmd {
	if os.Geteuid() == 0 {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", bin}, args...)...)
	}
	return exec.Command(bin, args...)
}

var pgTPS = regexp.MustCompile(`tps = ([0-9.]+)`)

// measurePostgres runs the naive design — one stock row decremented under
// SELECT … FOR UPDATE, a unique claim per user — with pgbench at 50
// clients, beside anteroom's claims.
func measurePostgres(ctx context.Context, s *stack, r *report) error {
	bin, err := pgBin()
	if err != nil {
		return err
	}
	data := filepath.Join(s.dir, "pg")
	if err := os.MkdirAll(data, 0o700); err != nil {
		return err
	}
	if os.Geteuid() == 0 {
		if out, err := exec.Command("chown", "-R", "postgres:postgres", s.dir).CombinedOutput(); err != nil {
			return fmt.Errorf("chown: %v %s", err, out)
		}
		_ = os.Chmod(s.dir, 0o755)
	}
	if out, err := asPostgres(filepath.Join(bin, "initdb"), "-D", data, "-A", "trust", "-U", "postgres").CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %v %s", err, out)
	}
	port, _ := loopback.FreePort()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=on -c synchronous_commit=off", port, data)
	if out, err := asPostgres(filepath.Join(bin, "pg_ctl"), "-D", data, "-o", opts, "-w", "-l", filepath.Join(data, "log"), "start").CombinedOutput(); err != nil {
		return fmt.Errorf("pg_ctl start: %v %s", err, out)
	}
	defer asPostgres(filepath.Join(bin, "pg_ctl"), "-D", data, "-m", "fast", "stop").Run()
	psql := func(sql string) error {
		out, err := asPostgres(filepath.Join(bin, "psql"), "-h", "127.0.0.1", "-p", fmt.Sprint(port), "-U", "postgres", "-v", "ON_ERROR_STOP=1", "-c", sql).CombinedOutput()
		if err != nil {
			return fmt.Errorf("psql: %v %s", err, out)
		}
		return nil
	}
	if err := psql(`CREATE TABLE items(id int PRIMARY KEY, stock bigint NOT NULL);
		CREATE TABLE claims(user_id bigint PRIMARY KEY, item int NOT NULL, at timestamptz NOT NULL DEFAULT now());
		INSERT INTO items VALUES (1, 100000000);`); err != nil {
		return err
	}
	script := filepath.Join(data, "claim.sql")
	const sql = `\set uid random(1, 1000000000)
BEGIN;
SELECT stock FROM items WHERE id = 1 FOR UPDATE;
UPDATE items SET stock = stock - 1 WHERE id = 1 AND stock > 0;
INSERT INTO claims(user_id, item) VALUES (:uid, 1) ON CONFLICT DO NOTHING;
COMMIT;
`
	if err := os.WriteFile(script, []byte(sql), 0o644); err != nil {
		return err
	}
	_ = os.Chmod(script, 0o644)
	args := []string{"-h", "127.0.0.1", "-p", fmt.Sprint(port), "-U", "postgres", "-n", "-c", "50", "-j", "2", "-T", strconv.Itoa(int(r.d / time.Second)), "-f", script, "postgres"}
	out, err := asPostgres(filepath.Join(bin, "pgbench"), args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pgbench: %v %s", err, out)
	}
	m := pgTPS.FindSubmatch(out)
	if m == nil {
		return fmt.Errorf("pgbench: no tps in %s", out)
	}
	tps, _ := strconv.ParseFloat(string(m[1]), 64)
	r.note("PostgreSQL runs with synchronous_commit=off, like JetStream's default file store, which acknowledges before fsync; with synchronous_commit=on the naive design is slower still.")
	r.command("pgbench -n -c 50 -j 2 -T " + strconv.Itoa(int(r.d/time.Second)) + " -f claim.sql   # BEGIN; SELECT … FOR UPDATE; UPDATE stock; INSERT claim; COMMIT")
	claims := r.peaks["claim"]
	ratio := claims / tps
	r.add("granted claims/s vs PostgreSQL row lock (naive design)", fmt.Sprintf("%.0f/s", claims), fmt.Sprintf("%.0f/s", tps), ratio, "≥ 10×", ratio >= 10)
	return nil
}
