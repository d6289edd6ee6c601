import java.sql.Connection;
import java.sql.Statement;

class Injection {
    void query(Connection conn, Statement stmt, String name) throws Exception {
        // ruleid: reviewflow-java-sql-injection
        stmt.executeQuery("SELECT * FROM users WHERE name = '" + name + "'");
        // ruleid: reviewflow-java-sql-injection
        conn.prepareStatement(String.format("DELETE FROM t WHERE n = '%s'", name));
        String q = "SELECT * FROM t WHERE n = '" + name + "'";
        // ruleid: reviewflow-java-sql-injection
        stmt.execute(q);
        // ok: reviewflow-java-sql-injection
        conn.prepareStatement("SELECT * FROM users WHERE name = ?");
        // ok: reviewflow-java-sql-injection
        stmt.executeQuery("SELECT count(*) FROM users");
    }

    void run(String file) throws Exception {
        // ruleid: reviewflow-java-command-injection
        Runtime.getRuntime().exec("tar xf " + file);
        // ruleid: reviewflow-java-command-injection
        new ProcessBuilder("sh", "-c", "grep " + file + " log.txt").start();
        // ok: reviewflow-java-command-injection
        new ProcessBuilder("tar", "xf", file).start();
        // ok: reviewflow-java-command-injection
        Runtime.getRuntime().exec("ls -l");
    }
}
