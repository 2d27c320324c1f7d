package io.tokenbucket.example.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Proxy lines: credentials are decoded exactly and never shown. */
class ProxyConfigTest {

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', quoteCharacter = '`', value = {
        // user info as written in the line                    | user      | password
        "us%40er:p)w&x                                          | us@er     | p)w&x",
        "scraper:%7B%7Benv:HOME%7D%7D                           | scraper   | {{env:HOME}}",
        "scraper:a+b%2Bc                                        | scraper   | a+b+c",
        "scraper:a%20b%25c%40d:e                                | scraper   | a b%c@d:e",
        "%C3%BC:p%C3%A4%F0%9F%94%91                             | \u00fc    | p\u00e4\ud83d\udd11",
        "\u00fc:p\u00e4ss                                       | \u00fc    | p\u00e4ss",
        "scraper:RAW(x))                                        | scraper   | RAW(x))",
        "scraper:                                               | scraper   | ``",
    })
    void decodesTheUserInfoAsAUrlDoesAndTakesNothingElseFromIt(String userInfo, String user, String password) {
        ProxyConfig proxy = ProxyConfig.parse("http://" + userInfo + "@10.0.0.7:3128 id=p1");

        assertThat(proxy.username()).isEqualTo(user);
        assertThat(proxy.password()).isEqualTo(password);
        assertThat(proxy.toString()).isEqualTo("p1=http://" + user + ":***@10.0.0.7:3128");
    }

    @Test
    void refusesWhatHttpBasicCannotCarryNamingTheLineWithoutItsPassword() {
        assertThatIllegalArgumentException().isThrownBy(() -> ProxyConfig.parse("http://us%3Aer:s3cret@h:1"))
                .withMessageContaining("user name cannot contain ':'").withMessageNotContaining("s3cret");
        assertThatIllegalArgumentException().isThrownBy(() -> ProxyConfig.parse("http://u:s3cret%0A@h:1"))
                .withMessageContaining("control characters").withMessageNotContaining("s3cret");
        assertThatIllegalArgumentException().isThrownBy(() -> ProxyConfig.parse("http://u:s3cret%4@h:1"))
                .withMessageContaining("Malformed escape").withMessageNotContaining("s3cret");
    }

    @Test
    void aLineThatDoesNotParseIsShownWithoutItsPasswordWhereverTheAtSignsAre() {
        // '@' unencoded in the password: the user info ends at the last '@' of the authority
        assertThatIllegalArgumentException().isThrownBy(() -> ProxyConfig.parse("http://u:s3c@ret@h:1"))
                .withMessageEndingWith("http://u:***@h:1").withMessageNotContaining("ret");
        assertThatIllegalArgumentException().isThrownBy(() -> ProxyConfig.parse("http://u:s3c{ret@h:1"))
                .withMessageEndingWith("http://u:***@h:1").withMessageNotContaining("ret");
        assertThatIllegalArgumentException().isThrownBy(() -> ProxyConfig.parse("u:s3cret@h:1"))
                .withMessageNotContaining("s3cret");
        assertThat(ProxyConfig.withoutPassword("http://h:1/a@b")).isEqualTo("http://h:1/a@b");
    }

    @Test
    void aSpaceInTheUserInfoIsRefusedWithoutShowingAnyPartOfThePassword() {
        // the line splits at the space: neither half of the password may appear, as the URL or as an option
        for (String line : List.of("http://scraper:pa55 w0rd@10.0.0.7:3128 id=p1", "http://scraper:1234 5678@h:1",
                "http://scraper:pa55 w=rd@h:1", "http://scr aper:pa55w0rd@h:1")) {
            assertThatIllegalArgumentException().as(line).isThrownBy(() -> ProxyConfig.parse(line))
                    .withMessageContaining("%20").withMessageNotContaining("pa55").withMessageNotContaining("w0rd")
                    .withMessageNotContaining("1234").withMessageNotContaining("5678");
        }
        // an id may hold an '@'
        assertThat(ProxyConfig.parse("http://h:1 id=a@b").id()).isEqualTo("a@b");
    }

    @Test
    void anIdIsAnyTextWithoutWhitespaceEvenTheBucketKindsWords() {
        // the hosts' and pairs' bucket keys hold a space, so no id can be one of them (ProxyLimitsTest)
        assertThat(ProxyConfig.parse("http://h:1 id=host").id()).isEqualTo("host");
        assertThat(ProxyConfig.parse("http://h:1 id=pair").id()).isEqualTo("pair");
        assertThat(ProxyConfig.parse("http://h:1 id=a,b").id()).isEqualTo("a,b");
    }

    @Test
    void limitTakesARateAnInFlightCapOrBothAndRefusesTheRestNamingIt() {
        ProxyConfig both = ProxyConfig.parse("http://h:1 limit=4/1s,8inflight");
        assertThat(both.capacity()).isEqualTo(4);
        assertThat(both.refillPeriodMs()).isEqualTo(1000);
        assertThat(both.inFlight()).isEqualTo(8);
        ProxyConfig slots = ProxyConfig.parse("http://h:1 limit=8InFlight,4/1s");
        assertThat(slots.inFlight()).isEqualTo(8);
        assertThat(slots.capacity()).isEqualTo(4);
        assertThat(ProxyConfig.parse("http://h:1 limit=3inflight").capacity()).as("the pool's rate").isZero();
        for (String bad : new String[] {"limit=0inflight", "limit=2inflight,3inflight", "limit=4/1s,5/1s",
                "limit=4/1s,", "limit=99999999999999999999inflight", "limit=1000000001inflight", "limit=x",
                "limit=4/soon", "limit=0/1s", "limit=4/0s"}) {
            assertThatThrownBy(() -> ProxyConfig.parse("http://u:secret@h:1 " + bad)).as(bad)
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("limit")
                    .hasMessageNotContaining("secret");
        }
    }

    @Test
    void masksItsOwnPasswordInAnyText() {
        ProxyConfig proxy = ProxyConfig.parse("http://u:s3cret@h:1");
        assertThat(proxy.maskIn("Connect to u:s3cret@h failed: s3cret")).isEqualTo("Connect to u:***@h failed: ***");
        assertThat(ProxyConfig.parse("http://h:1").maskIn("nothing to hide")).isEqualTo("nothing to hide");
    }
}
