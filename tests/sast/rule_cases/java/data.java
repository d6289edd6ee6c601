import java.beans.XMLDecoder;
import java.io.InputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.OutputStream;
import java.security.MessageDigest;
import javax.crypto.Cipher;

class Data {
    Object load(InputStream in, OutputStream out) throws Exception {
        // ruleid: reviewflow-java-unsafe-deserialization
        ObjectInputStream ois = new ObjectInputStream(in);
        // ruleid: reviewflow-java-unsafe-deserialization
        XMLDecoder decoder = new XMLDecoder(in);
        // ok: reviewflow-java-unsafe-deserialization
        ObjectOutputStream oos = new ObjectOutputStream(out);
        return ois.readObject();
    }

    void digest(byte[] data) throws Exception {
        // ruleid: reviewflow-java-weak-crypto
        MessageDigest md5 = MessageDigest.getInstance("MD5");
        // ruleid: reviewflow-java-weak-crypto
        Cipher ecb = Cipher.getInstance("AES/ECB/PKCS5Padding");
        // ruleid: reviewflow-java-weak-crypto
        Cipher des = Cipher.getInstance("DES/CBC/PKCS5Padding");
        // ruleid: reviewflow-java-weak-crypto
        Cipher plain = Cipher.getInstance("AES");
        // ok: reviewflow-java-weak-crypto
        MessageDigest sha = MessageDigest.getInstance("SHA-256");
        // ok: reviewflow-java-weak-crypto
        Cipher gcm = Cipher.getInstance("AES/GCM/NoPadding");
    }

    // ruleid: reviewflow-java-hardcoded-secret
    private static final String DB_PASSWORD = "s3cr3t-Pa55w0rd!";
    // ok: reviewflow-java-hardcoded-secret
    private static final String PASSWORD_PROPERTY = "db.password";
    // ok: reviewflow-java-hardcoded-secret
    private final String apiKey = System.getenv("API_KEY");

    void connect() {
        // ruleid: reviewflow-java-hardcoded-secret
        String clientSecret = "9f8e7d6c5b4a3210";
        // ok: reviewflow-java-hardcoded-secret
        String password = "changeme";
    }
}
