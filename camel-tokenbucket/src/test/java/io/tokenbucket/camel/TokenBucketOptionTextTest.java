package io.tokenbucket.camel;

import java.util.LinkedHashMap;
import java.util.Map;

import io.tokenbucket.camel.syntax.TokenBucketLimitSpec;
import io.tokenbucket.camel.syntax.TokenBucketOptionText;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Duration text as the endpoint options take it: Camel's syntax read exactly, the words Camel's own reader takes
 * ({@code 5min}, {@code 1hour}, {@code 90sec}) included, and the milliseconds bound instead of the text (a count's
 * number likewise).
 */
class TokenBucketOptionTextTest extends TokenBucketTestSupport {

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
        "1500          | 1500",
        "-3            | -3",
        "0ms           | 0",
        "500ms         | 500",
        "2s            | 2000",
        "2m            | 120000",
        "1h30m         | 5400000",
        "1d2h3m4s5ms   | 93784005",
        "5min          | 300000",
        "5mins         | 300000",
        "2minutes      | 120000",
        "1hour         | 3600000",
        "3hours        | 10800000",
        "90sec         | 90000",
        "30seconds     | 30000",
        "1day          | 86400000",
        "250millis     | 250",
        "7milliseconds | 7",
        "1h5min10sec   | 3910000",
        "PT2S          | 2000",
        "pt1m30s       | 90000",
        "PT0.25S       | 250",
        "PT0.0009S     | 0",
        "P1DT1H        | 90000000",
        "-PT1S         | -1000",
    })
    void durationTextIsReadExactly(String text, long millis) {
        assertThat(TokenBucketLimitSpec.durationMillis(text)).isEqualTo(millis);
    }

    @ParameterizedTest(name = "[{index}] ''{0}''")
    @CsvSource(delimiter = '|', value = {"abc", "5x", "PT", "P1S", "PT1X", "1.5s", "1 s", "s", "2H", "1s1h", "1m s", "''"})
    void otherTextIsNoDuration(String text) {
        assertThat(TokenBucketLimitSpec.durationMillis(text)).isEqualTo(TokenBucketLimitSpec.NOT_A_DURATION);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({"PT2562047788015216H", "P106751991167301D", "PT9223372036854775807S", "9223372036854775808"})
    void anIsoOrPlainDurationBeyondALongOfMillisecondsIsTooLong(String text) {
        assertThat(TokenBucketLimitSpec.durationMillis(text)).isEqualTo(TokenBucketLimitSpec.TOO_LONG);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
        "refillPeriod=5min&maxWait=90sec&storeTimeout=2s | 300000 | 90000 | 2000",
        "refillPeriod=1hour&maxWait=1h30m&storeTimeout=750 | 3600000 | 5400000 | 750",
        // a form Camel's reader would misread (it takes 3hours for an error, 1d2h3m4s5ms it reads right)
        "refillPeriod=3hours&maxWait=2minutes&storeTimeout=1s | 10800000 | 120000 | 1000",
        "refillPeriod=PT5M&maxWait=PT1.5S&storeTimeout=pt2s | 300000 | 1500 | 2000",
    })
    void anEndpointBindsTheMillisecondsNotTheText(String query, long refill, long maxWait, long storeTimeout) {
        TokenBucketEndpoint endpoint = context.getEndpoint("tokenbucket:text?" + query, TokenBucketEndpoint.class);
        assertThat(endpoint.getConfiguration().getRefillPeriod()).isEqualTo(refill);
        assertThat(endpoint.getConfiguration().getMaxWait()).isEqualTo(maxWait);
        assertThat(endpoint.getConfiguration().getStoreTimeout()).isEqualTo(storeTimeout);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {"maxWait | 45s | 45000 | Long", "capacity | 7 | 7 | Long",
        "maxWaiting | 7 | 7 | Integer", "keyHeader | 7 | 7 | String"})
    void numericTextIsReplacedByTheNumberItNames(String option, String text, String bound, String type) {
        Map<String, Object> parameters = new LinkedHashMap<>(Map.of(option, text));
        TokenBucketOptionText.check(parameters);
        assertThat(String.valueOf(parameters.get(option))).isEqualTo(bound);
        assertThat(parameters.get(option).getClass().getSimpleName()).isEqualTo(type);
    }
}
