package io.tokenbucket.camel.springboot;

import java.lang.reflect.Field;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.Locale;
import java.util.Set;
import java.util.stream.Collectors;

import io.tokenbucket.camel.TokenBucketConfiguration;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.context.properties.ConfigurationPropertiesBinding;
import org.springframework.core.convert.TypeDescriptor;
import org.springframework.core.convert.converter.GenericConverter;

/**
 * Reads the closed-set options of {@code camel.component.tokenbucket.*} ({@code mode}, {@code store},
 * {@code on-store-error}: every enum option of {@link TokenBucketConfiguration}) as Spring Boot reads enums (case
 * and dashes aside: {@code REJECT} is {@code reject}), and fails on any other text listing the allowed values,
 * which Spring Boot's own reading ({@code No enum constant ...}) does not.
 */
@AutoConfiguration
@ConfigurationPropertiesBinding
public class TokenBucketEnumConverter implements GenericConverter {

    /** A converter for the enum options of {@link TokenBucketConfiguration}. */
    public TokenBucketEnumConverter() {
    }

    @Override
    public Set<ConvertiblePair> getConvertibleTypes() {
        Set<ConvertiblePair> pairs = new LinkedHashSet<>();
        for (Field field : TokenBucketConfiguration.class.getDeclaredFields()) {
            if (field.getType().isEnum()) {
                pairs.add(new ConvertiblePair(String.class, field.getType()));
            }
        }
        return pairs;
    }

    @Override
    public Object convert(Object source, TypeDescriptor sourceType, TypeDescriptor targetType) {
        String text = source == null ? "" : source.toString().trim();
        if (text.isEmpty()) {
            return null;
        }
        Enum<?>[] constants = (Enum<?>[]) targetType.getType().getEnumConstants();
        for (Enum<?> constant : constants) {
            if (canonical(constant.name()).equals(canonical(text))) {
                return constant;
            }
        }
        throw new IllegalArgumentException("must be one of " + Arrays.stream(constants).map(Enum::name)
                .collect(Collectors.joining(", ")) + ", was '" + text + "'");
    }

    private static String canonical(String name) {
        return name.replaceAll("[^A-Za-z0-9]", "").toLowerCase(Locale.ROOT);
    }
}
