package io.tokenbucket.camel.springboot;

import java.util.LinkedHashSet;
import java.util.Set;
import java.util.concurrent.ExecutorService;

import io.tokenbucket.camel.TokenBucketConfiguration;
import io.tokenbucket.camel.TokenBucketLimitResolver;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.context.properties.ConfigurationPropertiesBinding;
import org.springframework.context.ApplicationContext;
import org.springframework.core.convert.TypeDescriptor;
import org.springframework.core.convert.converter.GenericConverter;

/**
 * Binds the object options of {@code camel.component.tokenbucket.*} given as bean references ({@code #bean:name}
 * or {@code #name}) to the Spring beans of that name. The options typed {@code Object} in
 * {@link TokenBucketComponentConfiguration} (their classes are optional dependencies) keep the reference text,
 * which Camel resolves when it sets them on the component. The text of a secret option ({@code redis-uri}) is
 * bound as a {@link TokenBucketSecret}, which shows it masked.
 */
@AutoConfiguration
@ConfigurationPropertiesBinding
public class TokenBucketComponentConverter implements GenericConverter {

    private final ApplicationContext applicationContext;

    public TokenBucketComponentConverter(ApplicationContext applicationContext) {
        this.applicationContext = applicationContext;
    }

    @Override
    public Set<ConvertiblePair> getConvertibleTypes() {
        Set<ConvertiblePair> answer = new LinkedHashSet<>();
        answer.add(new ConvertiblePair(String.class, TokenBucketConfiguration.class));
        answer.add(new ConvertiblePair(String.class, TokenBucketLimitResolver.class));
        answer.add(new ConvertiblePair(String.class, ExecutorService.class));
        answer.add(new ConvertiblePair(String.class, TokenBucketSecret.class));
        return answer;
    }

    @Override
    public Object convert(Object source, TypeDescriptor sourceType, TypeDescriptor targetType) {
        if (source == null) {
            return null;
        }
        String ref = source.toString();
        if (targetType.getType() == TokenBucketSecret.class) {
            return TokenBucketSecret.of(ref);
        }
        if (!ref.startsWith("#")) {
            return null;
        }
        ref = ref.startsWith("#bean:") ? ref.substring("#bean:".length()) : ref.substring(1);
        return applicationContext.getBean(ref, targetType.getType());
    }
}
