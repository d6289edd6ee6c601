import java.io.File;
import java.io.FileInputStream;
import java.io.PrintWriter;
import java.net.URL;
import java.nio.file.Paths;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;
import org.apache.commons.io.FilenameUtils;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;

class Web {
    void download(HttpServletRequest request) throws Exception {
        String name = request.getParameter("name");
        // ruleid: reviewflow-java-path-traversal
        FileInputStream in = new FileInputStream("/srv/files/" + name);
        // ruleid: reviewflow-java-path-traversal
        File file = new File("/srv/files", name);
        // ok: reviewflow-java-path-traversal
        File safe = new File("/srv/files", FilenameUtils.getName(name));
        // ok: reviewflow-java-path-traversal
        File index = new File("/srv/files/index.txt");
    }

    @GetMapping("/read")
    String read(@RequestParam String path) throws Exception {
        // ruleid: reviewflow-java-path-traversal
        return new String(java.nio.file.Files.readAllBytes(Paths.get("/srv", path)));
    }

    @GetMapping("/proxy")
    String proxy(@RequestParam String target) throws Exception {
        // ruleid: reviewflow-java-ssrf
        URL url = new URL(target);
        // ok: reviewflow-java-ssrf
        URL status = new URL("https://status.example.invalid/health");
        return url.toString() + status;
    }

    void hello(HttpServletRequest request, HttpServletResponse response) throws Exception {
        String name = request.getParameter("name");
        // ruleid: reviewflow-java-xss
        response.getWriter().write("<p>Hello " + name + "</p>");
        PrintWriter out = response.getWriter();
        // ruleid: reviewflow-java-xss
        out.println(name);
        // ok: reviewflow-java-xss
        out.println(org.owasp.encoder.Encode.forHtml(name));
        // ok: reviewflow-java-xss
        out.println("<p>static</p>");
    }
}
