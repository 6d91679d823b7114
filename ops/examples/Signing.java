// Signing an S2S request to the Upgrader platform (interface 5.1), in Java 17 with
// nothing but the JDK. Copy what you need. Java runs a single source file directly:
//
//   java ops/examples/Signing.java
//       a signed GET /api/s2s/health and POST /api/s2s/launches against $UPGRADER_URL
//       (default http://127.0.0.1:8000, what `make run` serves)
//   java ops/examples/Signing.java sign METHOD PATH [BODY [TIMESTAMP]]
//       prints the three headers as JSON (TIMESTAMP defaults to now), e.g. the README's
//       worked example: sign POST /api/s2s/launches '{"playerExternalId":...}' 1767225600
//
// The key comes from $UPGRADER_KEY_ID and $UPGRADER_SECRET (defaults: the demo key).

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

public class Signing {

    /** The canonical string is four lines: the timestamp, the upper-cased method, the path
     *  exactly as sent (no scheme, host or query), and the hex SHA-256 of the body bytes. */
    static String sign(String secret, String timestamp, String method, String path, byte[] body)
            throws GeneralSecurityException {
        String bodyHash = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(body));
        String canonical = String.join("\n", timestamp, method.toUpperCase(), path, bodyHash);
        Mac mac = Mac.getInstance("HmacSHA256");
        mac.init(new SecretKeySpec(secret.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
        return HexFormat.of().formatHex(mac.doFinal(canonical.getBytes(StandardCharsets.UTF_8)));
    }

    static Map<String, String> signedHeaders(
            String keyId, String secret, String method, String path, byte[] body, String timestamp)
            throws GeneralSecurityException {
        String ts = timestamp != null ? timestamp : Long.toString(System.currentTimeMillis() / 1000);
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put("X-Key-Id", keyId);
        headers.put("X-Timestamp", ts);
        headers.put("X-Signature", sign(secret, ts, method, path, body));
        return headers;
    }

    static String call(String baseUrl, String keyId, String secret, String method, String path, String body)
            throws Exception {
        // Sign the very bytes that are sent: encode the body once, use it twice.
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(baseUrl + path));
        signedHeaders(keyId, secret, method, path, bytes, null).forEach(request::header);
        if (bytes.length > 0) {
            request.header("Content-Type", "application/json");
            request.method(method, HttpRequest.BodyPublishers.ofByteArray(bytes));
        } else {
            request.method(method, HttpRequest.BodyPublishers.noBody());
        }
        // HTTP/1.1: the default (HTTP/2) first tries an h2c upgrade on http:// URLs, and a
        // server that does not take it may not see the body that was signed.
        HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        HttpResponse<String> response = client.send(request.build(), HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() >= 300) {
            throw new IllegalStateException(method + " " + path + ": " + response.statusCode() + " " + response.body());
        }
        return response.body();
    }

    static String json(Map<String, String> fields) {
        StringBuilder out = new StringBuilder("{");
        fields.forEach((name, value) -> out.append(out.length() > 1 ? "," : "")
                .append('"').append(name).append("\":\"").append(value).append('"'));
        return out.append('}').toString();
    }

    static String env(String name, String fallback) {
        String value = System.getenv(name);
        return value == null || value.isEmpty() ? fallback : value;
    }

    public static void main(String[] args) throws Exception {
        String keyId = env("UPGRADER_KEY_ID", "demo-key");
        String secret = env("UPGRADER_SECRET", "change-me-inbound");
        if (args.length > 0 && args[0].equals("sign")) {
            String body = args.length > 3 ? args[3] : "";
            String timestamp = args.length > 4 ? args[4] : null;
            byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
            System.out.println(json(signedHeaders(keyId, secret, args[1], args[2], bytes, timestamp)));
            return;
        }
        String baseUrl = env("UPGRADER_URL", "http://127.0.0.1:8000");
        System.out.println(call(baseUrl, keyId, secret, "GET", "/api/s2s/health", ""));
        String launch = "{\"playerExternalId\":\"player-1\",\"gameKey\":\"upgrader\",\"target\":{}}";
        System.out.println(call(baseUrl, keyId, secret, "POST", "/api/s2s/launches", launch));
    }
}
