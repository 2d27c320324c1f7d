package io.tokenbucket.camel.producer;

import java.lang.reflect.Array;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.function.Supplier;
import java.util.stream.IntStream;

import io.tokenbucket.camel.TokenBucketConfiguration;
import io.tokenbucket.camel.TokenBucketConstants;
import io.tokenbucket.camel.producer.TokenBucketRequest.Candidate;
import io.tokenbucket.camel.producer.TokenBucketRequest.Key;
import io.tokenbucket.math.Limits;
import io.tokenbucket.store.BucketStore;
import org.apache.camel.Message;

/**
 * Reads the key lists of an exchange: header {@code CamelTokenBucketCandidates} (keys, or candidate groups) and
 * header {@code CamelTokenBucketAllOf} or the {@code allOf} option. A list is a collection or any other
 * {@link Iterable}, an array, or text separated by commas; its keys are untrusted data, so every list is read no
 * further than its bound (distinct keys against {@code maxCandidates} and {@code maxAllOf}, all entries against
 * {@link #MAX_ENTRIES}), and each key is resolved once ({@link Key#of}).
 *
 * <p>Internal to the component: public for its other packages, not for applications.
 */
public final class TokenBucketKeyLists {

    /**
     * The most entries a key list (header {@code CamelTokenBucketCandidates} or {@code CamelTokenBucketAllOf}, option
     * {@code allOf}) is read for, blank and repeated ones included: 16,384, the keys one store step may charge
     * ({@link BucketStore#MAX_KEYS}) sixteen times over.
     */
    static final int MAX_ENTRIES = 16 * BucketStore.MAX_KEYS;

    /**
     * The candidates of header {@code CamelTokenBucketCandidates}, and whether they came as groups (a collection or
     * array with an entry that is itself one), which bounds all their keys together.
     */
    record Candidates(List<Candidate> list, boolean groups) {
    }

    private TokenBucketKeyLists() {
    }

    /**
     * The all-of keys of header {@code CamelTokenBucketAllOf}, else of the {@code allOf} option, without
     * {@code ownKey} (charged once); empty when there are none.
     */
    static List<Key> allOf(Message message, String name, TokenBucketConfiguration config,
                           Function<String, Limits> limitsOf, String ownKey) {
        Object raw = message.getHeader(TokenBucketConstants.ALL_OF);
        String header = TokenBucketConstants.ALL_OF;
        if (raw == null) {
            raw = config.getAllOf();
            header = "allOf";
            if (raw == null) {
                return List.of();
            }
        }
        int max = config.getMaxAllOf();
        String named = header;
        Object shown = raw;
        Set<String> distinct = distinctKeys(raw, named, key -> !key.equals(ownKey), max,
                () -> TokenBucketExceptions.tooManyAllOf(name, named, max, shown));
        return keysOf(distinct, limitsOf);
    }

    /**
     * Checks the {@code allOf} option's text, if set: at least one key (a text naming none, such as a placeholder
     * that resolved to nothing, would drop the keys it was meant to charge) and at most {@code maxAllOf} distinct ones.
     *
     * @throws IllegalArgumentException naming the option and its value
     */
    public static void allOfOption(TokenBucketConfiguration config) {
        String text = config.getAllOf();
        int max = config.getMaxAllOf();
        if (text != null && distinctKeys(text, "allOf", key -> true, max,
                () -> TokenBucketExceptions.tooManyAllOf(null, "allOf", max, text)).isEmpty()) {
            throw new IllegalArgumentException("allOf must name at least one key, was '" + text + "'");
        }
    }

    /**
     * The distinct candidate keys of header {@code CamelTokenBucketCandidates} in their order, or null when the
     * header is absent; read no further than one key past {@code maxCandidates}. An entry of a collection or array
     * that is itself one is a candidate group ({@link #groupsOf}).
     */
    static Candidates candidates(Message message, String name, TokenBucketConfiguration config,
                                 Function<String, Limits> limitsOf) {
        Object header = message.getHeader(TokenBucketConstants.CANDIDATES);
        if (header == null) {
            return null;
        }
        // looking for groups walks the entries before they are read as keys: an Iterable that is not a collection
        // may give them only once, so they are taken into a list first (bounded as items() bounds every list)
        Object raw = header instanceof Iterable<?> && !(header instanceof Collection<?>) ? listOf(header) : header;
        int max = config.getMaxCandidates();
        if (hasGroup(raw)) {
            return new Candidates(groupsOf(raw, name, max, config.getMaxAllOf(), limitsOf), true);
        }
        Set<String> distinct = distinctKeys(raw, TokenBucketConstants.CANDIDATES, key -> true, max,
                () -> TokenBucketExceptions.tooManyCandidates(name, max, raw));
        if (distinct.isEmpty()) {
            throw TokenBucketExceptions.noCandidate(raw);
        }
        return new Candidates(keysOf(distinct, limitsOf).stream().map(key -> new Candidate(key, List.of())).toList(),
                false);
    }

    /** The entries of an {@link Iterable} in a list, read once, at most {@link #MAX_ENTRIES}. */
    private static List<Object> listOf(Object iterable) {
        List<Object> entries = new ArrayList<>();
        items(iterable, TokenBucketConstants.CANDIDATES).forEachRemaining(entries::add);
        return entries;
    }

    /** Whether a header value is a collection or array with an entry that is itself a collection or array. */
    private static boolean hasGroup(Object raw) {
        if (!isList(raw)) {
            return false;
        }
        for (Iterator<?> items = items(raw, TokenBucketConstants.CANDIDATES); items.hasNext(); ) {
            if (isList(items.next())) {
                return true;
            }
        }
        return false;
    }

    private static boolean isList(Object value) {
        return value instanceof Iterable<?> || value != null && value.getClass().isArray();
    }

    /**
     * The entries of an {@link Iterable} or an array, in order, failing naming {@code header} past
     * {@link #MAX_ENTRIES}: only distinct keys count towards maxCandidates and maxAllOf, so without this bound a
     * header of a billion blank or repeated entries (or an endless {@code Iterable}) would be read for ever.
     */
    private static Iterator<?> items(Object list, String header) {
        Iterator<?> source = list instanceof Iterable<?> items ? items.iterator()
                : IntStream.range(0, Array.getLength(list)).mapToObj(i -> Array.get(list, i)).iterator();
        return new Iterator<Object>() {
            private int read;

            @Override
            public boolean hasNext() {
                return source.hasNext();
            }

            @Override
            public Object next() {
                if (++read > MAX_ENTRIES) {
                    throw TokenBucketExceptions.tooManyEntries(header, MAX_ENTRIES);
                }
                return source.next();
            }
        };
    }

    /**
     * The candidate groups of header {@code CamelTokenBucketCandidates}: each entry that is a collection or array is
     * a group, its first key the candidate and the rest charged with it; any other entry is a candidate alone (a
     * blank one is skipped, as in a plain list). A group's entries are keys, not lists. Every key must be distinct,
     * a group's first key non-blank and none of its keys blank, a group at most {@code maxAllOf} keys besides its
     * candidate, at most {@code maxCandidates} groups and {@link BucketStore#MAX_KEYS} keys in all; reading
     * stops at the first key past a bound.
     *
     * @throws IllegalArgumentException naming the header and its value otherwise
     */
    private static List<Candidate> groupsOf(Object raw, String name, int maxCandidates, int maxAllOf,
                                            Function<String, Limits> limitsOf) {
        Set<String> seen = new HashSet<>();
        List<List<String>> groups = new ArrayList<>();
        for (Iterator<?> items = items(raw, TokenBucketConstants.CANDIDATES); items.hasNext(); ) {
            Object item = items.next();
            List<String> group = new ArrayList<>();
            if (isList(item)) {
                for (Iterator<?> members = items(item, TokenBucketConstants.CANDIDATES); members.hasNext(); ) {
                    Object member = members.next();
                    if (isList(member)) {
                        // its text ("[a, b]") would be a bucket of its own, and none of its keys charged
                        throw TokenBucketExceptions.badGroup(name, raw, "a group's keys must be text, not a list");
                    }
                    String key = text(member);
                    if (key.isEmpty()) {
                        throw TokenBucketExceptions.badGroup(name, raw, "a group's keys must not be blank");
                    }
                    if (group.size() > maxAllOf) {
                        throw TokenBucketExceptions.badGroup(name, raw, "a group charges at most maxAllOf "
                                + maxAllOf + " keys with its candidate");
                    }
                    group.add(key);
                }
                if (group.isEmpty()) {
                    throw TokenBucketExceptions.badGroup(name, raw, "a group must start with its candidate key");
                }
            } else {
                String key = text(item);
                if (key.isEmpty()) {
                    continue;
                }
                group.add(key);
            }
            for (String key : group) {
                if (!seen.add(key)) {
                    throw TokenBucketExceptions.badGroup(name, raw, "key '" + TokenBucketExceptions.shown(key)
                            + "' is named twice; with groups every key is charged once");
                }
            }
            if (seen.size() > BucketStore.MAX_KEYS) {
                throw TokenBucketExceptions.tooManyGroupKeys(name, seen.size(), raw);
            }
            groups.add(group);
            if (groups.size() > maxCandidates) {
                throw TokenBucketExceptions.tooManyCandidates(name, maxCandidates, raw);
            }
        }
        if (groups.isEmpty()) {
            throw TokenBucketExceptions.noCandidate(raw);
        }
        // resolved once every key is known to be valid: the candidates first, then each group's other keys
        List<Key> keys = groups.stream().map(group -> Key.of(group.get(0), limitsOf)).toList();
        return IntStream.range(0, groups.size()).mapToObj(i -> new Candidate(keys.get(i),
                keysOf(new LinkedHashSet<>(groups.get(i).subList(1, groups.get(i).size())), limitsOf))).toList();
    }

    private static String text(Object item) {
        return item == null ? "" : item.toString().trim();
    }

    /**
     * The distinct non-blank keys of a header value in their order, those {@code kept} accepts: a collection or
     * any other {@link Iterable}, an array, or text separated by commas; read no further than one key past
     * {@code max}, which fails with {@code tooMany}.
     */
    private static Set<String> distinctKeys(Object raw, String header, Predicate<String> kept, int max,
                                            Supplier<IllegalArgumentException> tooMany) {
        Set<String> distinct = new LinkedHashSet<>();
        if (isList(raw)) {
            for (Iterator<?> items = items(raw, header); items.hasNext(); ) {
                addKey(distinct, text(items.next()), kept, max, tooMany);
            }
        } else {
            String text = raw.toString();
            int read = 0;
            for (int from = 0; from <= text.length(); ) {
                if (++read > MAX_ENTRIES) {
                    throw TokenBucketExceptions.tooManyEntries(header, MAX_ENTRIES);
                }
                int comma = text.indexOf(',', from);
                int to = comma < 0 ? text.length() : comma;
                addKey(distinct, text.substring(from, to).trim(), kept, max, tooMany);
                from = to + 1;
            }
        }
        return distinct;
    }

    /** Distinct keys, each resolved. */
    private static List<Key> keysOf(Set<String> distinct, Function<String, Limits> limitsOf) {
        return distinct.stream().map(key -> Key.of(key, limitsOf)).toList();
    }

    private static void addKey(Set<String> keys, String key, Predicate<String> kept, int max,
                               Supplier<IllegalArgumentException> tooMany) {
        if (!key.isEmpty() && kept.test(key) && keys.add(key) && keys.size() > max) {
            throw tooMany.get();
        }
    }
}
