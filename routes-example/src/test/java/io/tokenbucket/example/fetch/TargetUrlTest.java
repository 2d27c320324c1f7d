package io.tokenbucket.example.fetch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** What a URL becomes on its way to camel-http, and which URLs are refused: a table of cases, no servers. */
class TargetUrlTest {

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', quoteCharacter = '`', value = {
        // given | CamelHttpUri | CamelHttpRawQuery | request target at the site
        "http://h.test/page/10?u=9&x=a%20b | http://h.test/page/10 | u=9&x=a%20b | /page/10?u=9&x=a%20b",
        "http://h.test/page/a%2Fb | http://h.test/page/a%2Fb |  | /page/a%2Fb",
        "http://h.test/p\u00e4ge?q=\u00fc | http://h.test/p%C3%A4ge | q=%C3%BC | /p%C3%A4ge?q=%C3%BC",
        "http://h.test/page/11#frag?not=query | http://h.test/page/11 |  | /page/11",
        "http://h.test/a b?c d | http://h.test/a%20b | c%20d | /a%20b?c%20d",
        "http://h.test/100%/x?p=50% | http://h.test/100%25/x | p=50%25 | /100%25/x?p=50%25",
        "http://h.test/{{sys:user.home}}?q={{env:HOME}} | http://h.test/%7B%7Bsys:user.home%7D%7D | q={{env:HOME}} | /%7B%7Bsys:user.home%7D%7D?q=%7B%7Benv:HOME%7D%7D",
        "http://h.test/{{bean:proxyPool}} | http://h.test/%7B%7Bbean:proxyPool%7D%7D |  | /%7B%7Bbean:proxyPool%7D%7D",
        "http://h.test/a/./b/../c/%2e%2E/d | http://h.test/a/d |  | /a/d",
        "HTTPS://Example.TEST:8443 | https://example.test:8443/ |  | /",
        "http://h.test? | http://h.test/ | '' | /?",
        "http://b\u00fccher.test/x | http://xn--bcher-kva.test/x |  | /x",
        "http://[::1]:8080/x?y | http://[::1]:8080/x | y | /x?y",
        "http://h.test/~user/\"q\"?a='b' | http://h.test/~user/%22q%22 | a=%27b%27 | /%7Euser/%22q%22?a=%27b%27",
    })
    void isWrittenAsABrowserSendsItAndNeverHoldsAPlaceholderInTheResolvedPart(String given, String base,
                                                                             String rawQuery, String target) {
        TargetUrl url = TargetUrl.parse(given);

        assertThat(url.given()).isEqualTo(given);
        assertThat(url.base()).isEqualTo(base).doesNotContain("{{");
        assertThat(url.rawQuery()).isEqualTo(rawQuery == null ? null : rawQuery.equals("''") ? "" : rawQuery);
        assertThat(url.requestTarget()).isEqualTo(target);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', quoteCharacter = '`', value = {
        // given | reason (start) | shown as
        "ftp://h.test/file | only http and https URLs are fetched, not ftp: | ftp://h.test/file",
        "file:///etc/passwd | only http and https URLs are fetched, not file: | file:///etc/passwd",
        "javascript:alert(1) | only http and https URLs are fetched, not javascript: | javascript:alert(1)",
        "//h.test/no-scheme | not a URL (no scheme such as http:) | //h.test/no-scheme",
        "not a url | not a URL (no scheme such as http:) | not a url",
        "http:///no-host | no host | http:///no-host",
        "http:h.test/x | no host | http:h.test/x",
        "http://user:s3cret@h.test/x | a user name or password in the URL is not sent | http://user:***@h.test/x",
        "http://h.test:99999/x | port '99999' is not 1 to 65535 | http://h.test:99999/x",
        "http://h_t.test/x | 'h_t.test' is not a host name | http://h_t.test/x",
        "http://h t.test/x | the host holds a character a host cannot hold | http://h t.test/x",
    })
    void isRefusedWithItsReasonAndNeverShowsAPassword(String given, String reason, String shown) {
        TargetUrl.Refused refused = catchThrowableOfType(TargetUrl.Refused.class, () -> TargetUrl.parse(given));

        assertThat(refused).as("refused: %s", given).isNotNull();
        assertThat(refused.getMessage()).startsWith(reason).doesNotContain("s3cret");
        assertThat(refused.shown()).isEqualTo(shown);
    }

    @ParameterizedTest
    @CsvSource({ "8192, false", "8193, true" })
    void aUrlLongerThanTheLimitIsRefused(int length, boolean refused) {
        String prefix = "http://h.test/";
        String url = prefix + "a".repeat(length - prefix.length());
        if (refused) {
            assertThat(catchThrowableOfType(TargetUrl.Refused.class, () -> TargetUrl.parse(url)).getMessage())
                    .isEqualTo("longer than 8192 characters");
        } else {
            assertThat(TargetUrl.parse(url).base()).hasSize(length);
        }
    }
}
