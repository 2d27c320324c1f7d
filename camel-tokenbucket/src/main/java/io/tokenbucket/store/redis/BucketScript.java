package io.tokenbucket.store.redis;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;

/**
 * The bucket script ({@code bucket.lua}), run by its SHA-1 digest: {@code EVALSHA}, and when Redis answers
 * {@code NOSCRIPT} (it restarted, or someone ran {@code SCRIPT FLUSH}) one {@code EVAL} of the source, which
 * also loads it again. No retries beyond that one.
 */
final class BucketScript {

    private static final String INCLUDE = "--#include ";

    /** The script's source: {@code bucket.lua} with its parts ({@code bucket-state.lua}, {@code bucket-math.lua}). */
    static final String SOURCE = load();

    /** The SHA-1 of the source, hex: what {@code EVALSHA} names it by (computed here: no connection needed). */
    static final String DIGEST = sha1(SOURCE);

    private BucketScript() {
    }

    /** Runs the script on {@code keys}; the future completes on Lettuce's I/O thread. */
    static CompletableFuture<List<Long>> run(RedisClusterAsyncCommands<String, String> commands, String[] keys,
                                             String... args) {
        CompletableFuture<List<Long>> bySha = commands.<List<Long>> evalsha(DIGEST, ScriptOutputType.MULTI, keys, args)
                .toCompletableFuture();
        return bySha.handle((result, failure) -> {
            if (failure == null) {
                return CompletableFuture.completedFuture(result);
            }
            if (unwrap(failure) instanceof RedisNoScriptException) {
                return commands.<List<Long>> eval(SOURCE, ScriptOutputType.MULTI, keys, args).toCompletableFuture();
            }
            return CompletableFuture.<List<Long>> failedFuture(unwrap(failure));
        }).thenCompose(f -> f);
    }

    /** The cause of a {@link CompletionException}, or {@code t} itself: what a failed stage really failed with. */
    static Throwable unwrap(Throwable t) {
        return t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
    }

    private static String sha1(String text) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(text.getBytes(
                    StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-1 is missing from this JVM", e);
        }
    }

    /**
     * {@code bucket.lua} with each line {@code --#include <file>} replaced by that file of this package: Redis
     * scripts have no {@code require}, and one script on the wire keeps one {@code EVALSHA} per call, so the parts
     * are joined here, once.
     */
    private static String load() {
        StringBuilder script = new StringBuilder();
        for (String line : resource("bucket.lua").split("\n", -1)) {
            String include = line.startsWith(INCLUDE) ? line.substring(INCLUDE.length()).trim() : null;
            script.append(include == null ? line : resource(include).stripTrailing()).append('\n');
        }
        return script.substring(0, script.length() - 1);
    }

    private static String resource(String name) {
        try (InputStream in = BucketScript.class.getResourceAsStream(name)) {
            if (in == null) {
                throw new IllegalStateException(name + " is missing from the classpath");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
