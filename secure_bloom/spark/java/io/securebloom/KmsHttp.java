package io.securebloom;

import java.io.IOException;
import java.net.ConnectException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.LongFunction;
import org.apache.parquet.crypto.ParquetCryptoRuntimeException;
import shaded.parquet.com.fasterxml.jackson.core.JsonProcessingException;
import shaded.parquet.com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The HTTP exchange of the KMS clients ({@link AwsKmsClient}, {@link VaultTransitKmsClient}): one
 * call's attempts under a total deadline, retries and backoff included, and JSON with the Jackson
 * parquet-java shades.
 *
 * <p>{@link #send}: attempt 1 at once, then after a backoff of 0.2 s, 0.4 s, 0.8 s, ... (at most
 * 2 s), never an attempt whose backoff would end past the deadline; each attempt waits at most the
 * time left. Timeouts, connection failures and I/O errors are retried; any other failure of the
 * exchange, an interrupt and a redirect (3xx, never followed) end the call with a {@link
 * ParquetCryptoRuntimeException}. Every other answer goes to the client's {@link Answer}. Messages
 * name the call ({@code what}: operation, master key id, server) and the failure, never a request's
 * headers or body (tokens, signatures, key bytes).
 */
final class KmsHttp {
  /** Thread-safe once configured (it is never reconfigured). */
  private static final ObjectMapper JSON = new ObjectMapper();

  private KmsHttp() {}

  /** What a client makes of an answer that is not a redirect. */
  @FunctionalInterface
  interface Answer<T> {
    /**
     * The call's result; throws an unchecked exception for a final failure, or {@link Retry} for
     * one worth another attempt.
     */
    T read(HttpResponse<String> response) throws Retry;
  }

  /** An answer worth another attempt; its message is the call's failure if no attempt succeeds. */
  static final class Retry extends Exception {
    private static final long serialVersionUID = 1L;

    Retry(String failure) {
      super(failure, null, false, false);
    }
  }

  /**
   * Sends {@code request.apply(nanosLeft)} up to {@code attempts} times within {@code deadlineNanos}
   * and returns what {@code answer} makes of the first answer it does not retry.
   *
   * @param what the call, for messages ("AWS KMS Encrypt with key 'k' at URL")
   * @param redirectAdvice the end of the message for a redirect ("point P at the server that answers")
   */
  static <T> T send(HttpClient http, String what, long deadlineNanos, int attempts,
      LongFunction<HttpRequest> request, String redirectAdvice, Answer<T> answer) {
    String failure = "no attempt made";
    long deadline = System.nanoTime() + deadlineNanos;
    String late = "no answer within the deadline of " + deadlineNanos / 1_000_000_000.0 + " s";
    for (int attempt = 1; attempt <= attempts; attempt++) {
      if (attempt > 1) {
        long backoffMillis = Math.min(2000L, 100L << (attempt - 1));
        if (System.nanoTime() + backoffMillis * 1_000_000L >= deadline) {
          break;  // no retry that would start past the deadline
        }
        sleep(backoffMillis);
      }
      long remaining = deadline - System.nanoTime();
      if (remaining <= 0) {
        failure = late;
        break;
      }
      CompletableFuture<HttpResponse<String>> pending =
          http.sendAsync(request.apply(remaining), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
      HttpResponse<String> response;
      try {
        response = pending.get(remaining, TimeUnit.NANOSECONDS);
      } catch (TimeoutException e) {
        pending.cancel(true);
        failure = late;
        break;
      } catch (ExecutionException e) {
        Throwable cause = e.getCause();
        if (cause instanceof HttpTimeoutException) {
          failure = "timed out";
        } else if (cause instanceof ConnectException) {
          failure = "connection refused or unreachable";
        } else if (cause instanceof IOException) {
          failure = "I/O error " + cause.getClass().getSimpleName();
        } else {
          throw new ParquetCryptoRuntimeException(what + ": " + cause.getClass().getSimpleName());
        }
        continue;
      } catch (InterruptedException e) {
        pending.cancel(true);
        Thread.currentThread().interrupt();
        throw new ParquetCryptoRuntimeException(what + ": interrupted");
      }
      int status = response.statusCode();
      if (status >= 300 && status < 400) {
        throw new ParquetCryptoRuntimeException(
            what + " failed: HTTP " + status + " (a redirect); redirects are refused: " + redirectAdvice);
      }
      try {
        return answer.read(response);
      } catch (Retry retry) {
        failure = retry.getMessage();
      }
    }
    throw new ParquetCryptoRuntimeException(what + " failed: " + failure);
  }

  /** {@code value} as JSON text (a request body of strings and maps of strings: cannot fail). */
  static String toJson(Map<String, ?> value) {
    try {
      return JSON.writeValueAsString(value);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("JSON: cannot write a map of strings", e);
    }
  }

  /** A JSON object; IllegalArgumentException for anything else (not JSON, or not an object). */
  @SuppressWarnings("unchecked")
  static Map<String, Object> parseObject(String text) {
    Object value;
    try {
      value = JSON.readValue(text, Object.class);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("JSON: not valid", e);
    }
    if (!(value instanceof Map)) {
      throw new IllegalArgumentException("JSON: expected an object");
    }
    return (Map<String, Object>) value;
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
