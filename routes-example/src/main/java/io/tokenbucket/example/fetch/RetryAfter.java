package io.tokenbucket.example.fetch;

import java.time.Clock;
import java.time.DateTimeException;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.tokenbucket.example.proxy.RestBackoff;

/**
 * How long a 429 rests its proxy, read from the target's {@code Retry-After} (RFC 9110 §10.2.3), which is
 * untrusted input: a hostile or broken target must not bench a proxy, on every instance sharing its bucket,
 * for longer than {@code maxMillis} ({@code example.maxRetryAfter}).
 *
 * <ul>
 * <li>delay-seconds, digits only: that many seconds, at most {@code maxMillis} (a number of any length
 *     saturates at the cap, it never overflows);</li>
 * <li>an HTTP-date in any of the three forms a recipient must accept (RFC 9110 §5.6.7): IMF-fixdate
 *     {@code Sun, 06 Nov 1994 08:49:37 GMT}, the obsolete RFC 850 {@code Sunday, 06-Nov-94 08:49:37 GMT} (a
 *     two-digit year more than 50 years ahead is taken as the past century's) and asctime
 *     {@code Sun Nov  6 08:49:37 1994}: the time until then on {@code clock}, 0 for a date in the past, at most
 *     {@code maxMillis};</li>
 * <li>absent, empty or anything else (a sign, a fraction, {@code 1e9}, words, an impossible date):
 *     {@code defaultMillis} ({@code example.penalty}).</li>
 * </ul>
 * Immutable; the clock is a parameter so that tests need no sleeps. Not HttpClient's
 * {@code DateUtils.parseStandardDate}: in 5.5 it reads IMF-fixdate only of the three forms, and takes zones other
 * than {@code GMT} ({@code PST}), which the grammar does not allow.
 */
public final class RetryAfter {

    /** The longest {@code example.maxRetryAfter}, the pairs' backoff's ceiling ({@link RestBackoff}). */
    public static final long CEILING_MILLIS = RestBackoff.CEILING_MILLIS;

    private static final String DAY = "(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)";
    private static final String LONG_DAY = "(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)";
    private static final String MONTH = "(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)";
    private static final String TIME = "(\\d{2}):(\\d{2}):(\\d{2})";
    private static final List<String> MONTHS = List.of("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug",
            "sep", "oct", "nov", "dec");
    // day names and months are case-sensitive in the grammar; a recipient loses nothing by accepting any case
    private static final Pattern IMF_FIXDATE = Pattern.compile(DAY + ", (\\d{2}) " + MONTH + " (\\d{4}) " + TIME
            + " GMT", Pattern.CASE_INSENSITIVE);
    private static final Pattern RFC_850 = Pattern.compile(LONG_DAY + ", (\\d{2})-" + MONTH + "-(\\d{2}) " + TIME
            + " GMT", Pattern.CASE_INSENSITIVE);
    private static final Pattern ASCTIME = Pattern.compile(DAY + " " + MONTH + " ([ \\d]\\d) " + TIME
            + " (\\d{4})", Pattern.CASE_INSENSITIVE);

    private final long defaultMillis;
    private final long maxMillis;
    private final Clock clock;

    /**
     * @param defaultMillis the rest when the target gives no usable {@code Retry-After}; at most {@code maxMillis}
     * @param maxMillis     the longest rest a target can ask for, 0 to {@link #CEILING_MILLIS}
     * @param clock         the wall clock HTTP dates are compared with
     */
    public RetryAfter(long defaultMillis, long maxMillis, Clock clock) {
        if (maxMillis < 0 || maxMillis > CEILING_MILLIS) {
            throw new IllegalArgumentException("example.maxRetryAfter must be between 0 and 1d, was " + maxMillis
                    + " ms");
        }
        if (defaultMillis < 0 || defaultMillis > maxMillis) {
            throw new IllegalArgumentException("example.penalty must be between 0 and example.maxRetryAfter ("
                    + maxMillis + " ms), was " + defaultMillis + " ms");
        }
        this.defaultMillis = defaultMillis;
        this.maxMillis = maxMillis;
        this.clock = clock;
    }

    /** The rest in milliseconds for this {@code Retry-After} value (null when the header is absent). */
    public long millis(String value) {
        if (value == null) {
            return defaultMillis;
        }
        String v = value.strip();
        if (!v.isEmpty() && v.chars().allMatch(c -> c >= '0' && c <= '9')) {
            return seconds(v);
        }
        Long epochMillis = httpDate(v);
        if (epochMillis == null) {
            return defaultMillis;
        }
        return Math.min(maxMillis, Math.max(0, epochMillis - clock.millis()));
    }

    private long seconds(String digits) {
        long maxSeconds = maxMillis / 1000 + 1; // one past the cap is enough to know the cap applies
        long seconds = 0;
        for (int i = 0; i < digits.length() && seconds <= maxSeconds; i++) {
            seconds = seconds * 10 + (digits.charAt(i) - '0');
        }
        return Math.min(maxMillis, seconds * 1000);
    }

    /** Epoch milliseconds of an HTTP-date in any of its three forms, null when it is none of them. */
    private Long httpDate(String v) {
        try {
            Matcher m = IMF_FIXDATE.matcher(v);
            if (m.matches()) {
                return utc(Integer.parseInt(m.group(3)), m.group(2), m.group(1), m.group(4), m.group(5), m.group(6));
            }
            m = RFC_850.matcher(v);
            if (m.matches()) {
                return utc(fullYear(Integer.parseInt(m.group(3))), m.group(2), m.group(1), m.group(4), m.group(5),
                        m.group(6));
            }
            m = ASCTIME.matcher(v);
            if (m.matches()) {
                return utc(Integer.parseInt(m.group(6)), m.group(1), m.group(2).strip(), m.group(3), m.group(4),
                        m.group(5));
            }
        } catch (DateTimeException impossible) { // 30 Feb, 25:00:00: nonsense like any other
            return null;
        }
        return null;
    }

    /** RFC 9110 §5.6.7: a two-digit year that would be more than 50 years ahead is in the past century. */
    private int fullYear(int twoDigits) {
        int thisYear = LocalDateTime.now(clock.withZone(ZoneOffset.UTC)).getYear();
        int year = thisYear - Math.floorMod(thisYear, 100) + twoDigits;
        return year > thisYear + 50 ? year - 100 : year;
    }

    private static long utc(int year, String month, String day, String hour, String minute, String second) {
        return LocalDateTime.of(year, MONTHS.indexOf(month.toLowerCase(Locale.ROOT)) + 1, Integer.parseInt(day),
                Integer.parseInt(hour), Integer.parseInt(minute), Integer.parseInt(second))
                .toInstant(ZoneOffset.UTC).toEpochMilli();
    }
}
