package io.tokenbucket.it;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The user docs stay readable in one sitting and their links lead somewhere: each budgeted page has at most its
 * number of words (counted as {@code wc -w} counts them: runs of non-blank characters), all of them together at most
 * {@link #TOTAL_BUDGET}, and every relative link of every Markdown and AsciiDoc page of the repository resolves to a
 * file, and its {@code #anchor} to a heading of that page.
 */
class DocPagesIT {

    /** Word budgets, by path relative to the repository root. */
    private static final Map<String, Integer> BUDGETS = budgets();

    private static final Pattern WORD = Pattern.compile("\\S+");
    /** {@code [text](target)} and {@code [text](target "title")}; images too. */
    private static final Pattern MD_LINK = Pattern.compile("\\[[^\\]\\n]*\\]\\(([^)\\s]+)(?:\\s+\"[^\"]*\")?\\)");
    /** {@code [label]: target} reference definitions. */
    private static final Pattern MD_REF = Pattern.compile("(?m)^ {0,3}\\[[^\\]]+\\]:\\s+(\\S+)");
    private static final Pattern MD_HEADING = Pattern.compile("(?m)^#{1,6}[ \\t]+(.+?)[ \\t]*#*[ \\t]*$");
    private static final Pattern ADOC_LINK = Pattern.compile("(?:link|xref|image):{1,2}([^\\s\\[]+)\\[");
    private static final Pattern ADOC_XREF = Pattern.compile("<<([^,>]+)(?:,[^>]*)?>>");
    private static final Pattern ADOC_TITLE = Pattern.compile("(?m)^={1,6}[ \\t]+(.+?)[ \\t]*$");
    private static final Pattern ADOC_ANCHOR = Pattern.compile("\\[\\[([^\\],]+)|\\[#([^\\].,]+)");
    private static final Pattern FENCE = Pattern.compile("(?ms)^(```|----|\\.\\.\\.\\.)[^\\n]*\\n.*?^\\1\\s*$");

    private static Map<String, Integer> budgets() {
        Map<String, Integer> budgets = new LinkedHashMap<>();
        budgets.put("README.md", 1_000);
        budgets.put("camel-tokenbucket/src/main/docs/tokenbucket-component.adoc", 7_000);
        budgets.put("routes-example/README.md", 2_500);
        budgets.put("camel-tokenbucket-starter/README.md", 1_000);
        budgets.put("docs/how-it-works.md", 4_000);
        budgets.put("BENCHMARKS.md", 3_000);
        budgets.put("CHANGELOG.md", 500);
        return budgets;
    }

    /** The words of every user doc together (the pages of {@link #BUDGETS}): what one reads to know the project. */
    private static final int TOTAL_BUDGET = 15_000;

    private static Path root() {
        return Path.of(System.getProperty("basedir", ".")).toAbsolutePath().normalize().getParent();
    }

    @Test
    void everyBudgetedPageIsWithinItsWords() throws IOException {
        List<String> over = new ArrayList<>();
        for (Map.Entry<String, Integer> budget : BUDGETS.entrySet()) {
            long words = words(Files.readString(root().resolve(budget.getKey())));
            if (words > budget.getValue()) {
                over.add(budget.getKey() + " has " + words + " words, over its budget of " + budget.getValue());
            }
        }
        assertThat(over).as("pages over their word budget (counted like wc -w)").isEmpty();
    }

    @Test
    void theUserDocsTogetherAreWithinTheirTotal() throws IOException {
        long total = 0;
        for (String page : BUDGETS.keySet()) {
            total += words(Files.readString(root().resolve(page)));
        }
        assertThat(total).as("words of " + BUDGETS.keySet() + " together (counted like wc -w)")
                .isLessThanOrEqualTo(TOTAL_BUDGET);
    }

    @Test
    void wordsAreCountedLikeWcDashW() {
        assertThat(words("")).isZero();
        assertThat(words("one")).isEqualTo(1);
        assertThat(words("  `tokenbucket:p?capacity=5`  and\tthe\nnext, line\r\n")).isEqualTo(5);
    }

    @Test
    void everyRelativeLinkOfEveryPageResolves() throws IOException {
        List<Path> pages = pages();
        assertThat(pages).as("doc pages under " + root()).hasSizeGreaterThanOrEqualTo(BUDGETS.size());
        List<String> broken = new ArrayList<>();
        for (Path page : pages) {
            String text = Files.readString(page);
            String name = root().relativize(page).toString();
            if (name.endsWith(".md")) {
                String prose = FENCE.matcher(text).replaceAll("");
                for (Pattern p : List.of(MD_LINK, MD_REF)) {
                    Matcher m = p.matcher(prose);
                    while (m.find()) {
                        check(page, m.group(1)).ifPresent(why -> broken.add(name + ": " + why));
                    }
                }
            } else {
                String prose = FENCE.matcher(text).replaceAll("");
                Matcher m = ADOC_LINK.matcher(prose);
                while (m.find()) {
                    if (!m.group(1).contains("::")) { // xref:manual::... points into Camel's site
                        check(page, m.group(1)).ifPresent(why -> broken.add(name + ": " + why));
                    }
                }
                Set<String> targets = adocTargets(text);
                Matcher x = ADOC_XREF.matcher(prose);
                while (x.find()) {
                    if (!targets.contains(x.group(1).trim())) {
                        broken.add(name + ": <<" + x.group(1) + ">> names no section title or anchor of the page");
                    }
                }
            }
        }
        assertThat(broken).as("relative links that do not resolve").isEmpty();
    }

    /** Why {@code target}, a link on {@code page}, does not resolve; empty when it does or is not relative. */
    private static Optional<String> check(Path page, String target) throws IOException {
        if (target.matches("^[a-zA-Z][a-zA-Z0-9+.-]*:.*") || target.startsWith("//") || target.startsWith("{")) {
            return Optional.empty(); // http:, mailto:, an attribute: not a file of this repository
        }
        int hash = target.indexOf('#');
        String file = hash < 0 ? target : target.substring(0, hash);
        String anchor = hash < 0 ? null : target.substring(hash + 1);
        Path resolved = file.isEmpty() ? page : page.getParent().resolve(file).normalize();
        if (!Files.exists(resolved)) {
            return Optional.of(target + " -> " + root().relativize(resolved) + " does not exist");
        }
        if (anchor != null && resolved.toString().endsWith(".md")
                && !markdownAnchors(Files.readString(resolved)).contains(anchor)) {
            return Optional.of(target + " -> no heading of " + root().relativize(resolved)
                    + " has the anchor #" + anchor);
        }
        if (anchor != null && resolved.toString().endsWith(".adoc")
                && !adocIds(Files.readString(resolved)).contains(anchor)) {
            return Optional.of(target + " -> no section or anchor of " + root().relativize(resolved)
                    + " has the id " + anchor);
        }
        return Optional.empty();
    }

    /**
     * The ids an AsciiDoc page's sections and anchors get where its relative links are followed, on GitHub: explicit
     * anchors as written, a section title's id as GitHub renders AsciiDoc ({@link #githubAdocId}).
     */
    private static Set<String> adocIds(String text) {
        Set<String> ids = new java.util.HashSet<>(adocTargets(text));
        String prose = FENCE.matcher(text).replaceAll("");
        ADOC_TITLE.matcher(prose).results().map(r -> githubAdocId(r.group(1))).forEach(ids::add);
        return ids;
    }

    /**
     * A section title's id as GitHub renders AsciiDoc: Asciidoctor's own rule with GitHub's {@code idprefix} (empty)
     * and {@code idseparator} ({@code -}), github/markup's attributes, not Asciidoctor's defaults ({@code _} and
     * {@code _}, which Camel's site uses): lower case, formatting marks and every character other than a letter, a
     * digit, {@code _}, a space, {@code .} or {@code -} dropped (an apostrophe, a colon, a slash), every run of
     * spaces, dots and hyphens one {@code -}, none at either end. "Adaptive rate" is {@code adaptive-rate}.
     */
    static String githubAdocId(String title) {
        return title.toLowerCase(Locale.ROOT).replaceAll("[^\\p{L}\\p{M}\\p{N}_ .-]+", "")
                .replaceAll("[ .-]+", "-").replaceAll("^-+|-+$", "");
    }

    @Test
    void anAsciiDocSectionsIdIsTheOneGithubGivesIt() {
        assertThat(githubAdocId("Adaptive rate")).isEqualTo("adaptive-rate");
        assertThat(githubAdocId("Several keys: candidates, all-of, groups"))
                .isEqualTo("several-keys-candidates-all-of-groups");
        assertThat(githubAdocId("Query Parameters (36 parameters)")).isEqualTo("query-parameters-36-parameters");
        assertThat(githubAdocId("A host's `maxWait`")).isEqualTo("a-hosts-maxwait");
        assertThat(githubAdocId("Redis/Cluster and key_prefix")).isEqualTo("rediscluster-and-key_prefix");
    }

    /** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
    private static Set<String> markdownAnchors(String text) {
        Map<String, Integer> seen = new LinkedHashMap<>();
        Matcher m = MD_HEADING.matcher(FENCE.matcher(text).replaceAll(""));
        while (m.find()) {
            String slug = m.group(1).toLowerCase(Locale.ROOT).replaceAll("[^\\p{L}\\p{N} _-]", "").replace(' ', '-');
            int n = seen.merge(slug, 1, Integer::sum);
            if (n > 1) {
                seen.put(slug + "-" + (n - 1), 1);
            }
        }
        return seen.keySet();
    }

    /** What {@code <<...>>} may name in an AsciiDoc page: its section titles and explicit anchors. */
    private static Set<String> adocTargets(String text) {
        String prose = FENCE.matcher(text).replaceAll("");
        Set<String> targets = ADOC_TITLE.matcher(prose).results().map(r -> r.group(1)).collect(Collectors.toSet());
        ADOC_ANCHOR.matcher(prose).results()
                .forEach(r -> targets.add(r.group(1) != null ? r.group(1) : r.group(2)));
        return targets;
    }

    /** Every Markdown and AsciiDoc page of the repository, build output and VCS folders left out. */
    private static List<Path> pages() throws IOException {
        try (Stream<Path> files = Files.walk(root())) {
            return files.filter(p -> p.toString().endsWith(".md") || p.toString().endsWith(".adoc"))
                    .filter(p -> Stream.of(root().relativize(p).toString().split("/"))
                            .noneMatch(part -> part.equals("target") || part.startsWith(".")))
                    .sorted().toList();
        }
    }

    private static long words(String text) {
        return WORD.matcher(text).results().count();
    }
}
