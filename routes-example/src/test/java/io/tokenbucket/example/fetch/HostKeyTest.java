package io.tokenbucket.example.fetch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** The per-host key: one key for what a site counts as one host, and hostile URLs refused with the reason. */
class HostKeyTest {

    @ParameterizedTest
    @CsvSource({
        "http://Example.ORG/a,                          example.org",
        "http://example.org:80/a,                       example.org",
        "https://example.org:443/a,                     example.org",
        "http://example.org:443/a,                      example.org:443",
        "https://example.org:80,                        example.org:80",
        "http://example.org:8080?q=1,                   example.org:8080",
        "http://example.org.:8080/,                     example.org:8080",
        "http://example.org#frag,                       example.org",
        "http://user:secret@example.org/,               example.org",
        "http://a@b@example.org:81/,                    example.org:81",
        "http://Bücher.Example/,                        xn--bcher-kva.example",
        "http://xn--bcher-kva.example/,                 xn--bcher-kva.example",
        "http://[::1]:8080/,                            [0:0:0:0:0:0:0:1]:8080",
        "http://[0:0:0:0:0:0:0:1]:8080/,                [0:0:0:0:0:0:0:1]:8080",
        "http://[::FFFF:127.0.0.1]/,                    127.0.0.1",
        "http://127.0.0.2:41000/page/1,                 127.0.0.2:41000",
    })
    void oneKeyForOneHost(String url, String key) {
        assertThat(HostKey.of(url)).isEqualTo(key);
    }

    @ParameterizedTest
    @ValueSource(strings = {"http://", "http:///path", "example.org/a", "http://:80/", "http://example.org:0/",
        "http://example.org:65536/", "http://example.org:99999999999999999999/", "http://example.org:8x/",
        "http://[::1/", "http://[zz::1]/", "http://[::1%eth0]/", "http://exa mple.org/", "http://exa%2fmple.org/"})
    void refusesWhatIsNoHost(String url) {
        assertThatIllegalArgumentException().isThrownBy(() -> HostKey.of(url));
    }

    @Test
    void aHugeHostIsRefusedBeforeAnyWorkAndAKeyIsBounded() {
        String huge = "http://" + "a".repeat(5_000_000) + ".example/";
        assertThatIllegalArgumentException().isThrownBy(() -> HostKey.of(huge))
                .withMessageContaining("longer than 253 characters");
        String longest = "a".repeat(63) + "." + "b".repeat(63) + "." + "c".repeat(63) + "." + "d".repeat(61);
        assertThat(HostKey.of("http://" + longest + ":65535/")).hasSize(HostKey.MAX_KEY);
        assertThatIllegalArgumentException().isThrownBy(() -> HostKey.of("http://x" + longest + "/"));
        assertThatIllegalArgumentException().isThrownBy(() -> HostKey.of((String) null)).withMessage("no URL");
    }

    @Test
    void theKeyOfACheckedUrlIsItsHost() {
        assertThat(HostKey.of(TargetUrl.parse("HTTP://WWW.Example.org:80/a/../b?x=1"))).isEqualTo("www.example.org");
    }
}
