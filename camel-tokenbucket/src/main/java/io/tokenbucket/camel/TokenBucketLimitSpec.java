package io.tokenbucket.camel;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.tokenbucket.math.Limit;
import io.tokenbucket.math.Limits;

/**
 * Reads the limit syntax of the {@code limits} and {@code keyLimits} options and of
 * {@link TokenBucketLimitResolver}: a comma-separated list of {@code N/period}, each a limit of {@code N}
 * tokens refilled every {@code period} (Camel duration text: {@code 1s}, {@code 500ms}, {@code 1h}), with an
 * optional {@code :burst} for a capacity other than {@code N}. {@code 10/1s,1000/1h} is 10 per second and 1000
 * per hour; {@code 1/1s:5} is one per second in bursts of up to 5.
 *
 * <p>Parsed texts are kept (up to {@value #MAX_CACHED}), so a resolver may answer with the same text on every
 * exchange at no cost.
 */
final class TokenBucketLimitSpec {

    private static final Pattern ITEM = Pattern.compile("\\s*(\\d+)\\s*/\\s*([0-9a-zA-Z ]+?)\\s*(?::\\s*(\\d+)\\s*)?");
    private static final int MAX_CACHED = 1000;
    private static final Map<String, Limits> PARSED = new ConcurrentHashMap<>();

    private TokenBucketLimitSpec() {
    }

    /**
     * The limits that {@code text} names.
     *
     * @param source where the text comes from, for the message (an option or the resolver)
     * @throws IllegalArgumentException naming the source and the text when it does not read as limits
     */
    static Limits parse(String text, String source) {
        Limits cached = PARSED.get(text);
        if (cached != null) {
            return cached;
        }
        List<Limit> limits = new ArrayList<>();
        for (String item : text.split(",")) {
            Matcher m = ITEM.matcher(item);
            long periodMillis;
            if (!m.matches() || (periodMillis = TokenBucketOptionText.durationMillis(m.group(2))) < 1) {
                throw new IllegalArgumentException(source + " must be limits such as 10/1s or 10/1s,1000/1h or"
                        + " 1/1s:5 (one per second, bursts of 5), was '" + text + "'");
            }
            long tokens = Long.parseLong(m.group(1));
            long burst = m.group(3) != null ? Long.parseLong(m.group(3)) : tokens;
            try {
                limits.add(Limit.of(burst, tokens, TimeUnit.MILLISECONDS.toNanos(periodMillis)));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(source + " '" + text + "': " + e.getMessage(), e);
            }
        }
        Limits parsed = Limits.of(limits);
        if (PARSED.size() < MAX_CACHED) {
            PARSED.put(text, parsed);
        }
        return parsed;
    }

    /**
     * The per-key limits of the {@code keyLimits} option: {@code pattern=limits} entries separated by {@code ;},
     * where a pattern is a key or a glob with {@code *} ({@code premium-*=20/1s;p7=10/1s,1000/1h}). The first
     * matching entry wins.
     */
    static List<Map.Entry<Pattern, Limits>> parseKeyLimits(String text) {
        List<Map.Entry<Pattern, Limits>> entries = new ArrayList<>();
        for (String entry : text.split(";")) {
            if (entry.isBlank()) {
                continue;
            }
            int eq = entry.indexOf('=');
            if (eq < 1) {
                throw new IllegalArgumentException("keyLimits must be entries such as premium-*=20/1s;p7=10/1s"
                        + " separated by ';', was '" + text + "'");
            }
            String glob = entry.substring(0, eq).trim();
            Pattern pattern = Pattern.compile(Pattern.quote(glob).replace("*", "\\E.*\\Q"));
            entries.add(Map.entry(pattern, parse(entry.substring(eq + 1).trim(), "keyLimits entry " + glob)));
        }
        return entries;
    }
}
