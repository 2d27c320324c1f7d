/**
 * Seeds for randomised tests: {@link TestSeed} gives each its fixed seed, prints it, and takes another from
 * {@code -Dtokenbucket.seed} to rerun a case or explore new ones.
 */
package io.tokenbucket.testsupport.random;
