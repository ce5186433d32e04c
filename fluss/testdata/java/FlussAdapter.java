/*
 * The few Fluss Java calls whose signatures differ between the versions the oracles run on
 * (FlussGolden.java, FlussLakeGolden.java). Exactly one implementation is compiled with the
 * oracles, against its own jar: FlussAdapter09.java (fluss-server 0.9.1-incubating) or
 * FlussAdapter10.java (fluss-client 1.0.0); the test harness names it in the system property
 * flussgolden.adapter. Everything else the oracles call has the same signature in both.
 */

import org.apache.fluss.config.Configuration;
import org.apache.fluss.memory.AbstractPagedOutputView;
import org.apache.fluss.metadata.Schema;
import org.apache.fluss.metadata.SchemaGetter;
import org.apache.fluss.metadata.TableInfo;
import org.apache.fluss.metadata.TablePath;
import org.apache.fluss.record.LogRecordReadContext;
import org.apache.fluss.record.MemoryLogRecordsArrowBuilder;
import org.apache.fluss.row.arrow.ArrowWriter;
import org.apache.fluss.types.RowType;

import java.util.List;

interface FlussAdapter {

    /** The Fluss line the implementation is written for ("0.9", "1.0"). */
    String line();

    /** An append-only ARROW batch builder at offset 0, as the client's writer for a plain log table builds it. */
    MemoryLogRecordsArrowBuilder appendOnlyArrowBuilder(int schemaId, ArrowWriter writer, AbstractPagedOutputView out);

    /** Whether the version writes column statistics into log batches (table.statistics.columns). */
    boolean columnStatistics();

    /**
     * An append-only ARROW batch builder with column statistics for every supported column, as the
     * client's writer builds it for a table with table.statistics.columns = '*' (only where
     * columnStatistics()).
     */
    MemoryLogRecordsArrowBuilder statisticsArrowBuilder(RowType rowType, int schemaId, ArrowWriter writer,
            AbstractPagedOutputView out);

    /** A reader of COMPACTED log batches written with schemaId. */
    LogRecordReadContext compactedReadContext(RowType rowType, int schemaId, SchemaGetter schemas);

    /** A TableInfo with no comment, no remote data dir and zero times, as the client has it for a table. */
    TableInfo tableInfo(TablePath path, long tableId, int schemaId, Schema schema, List<String> bucketKeys,
            List<String> partitionKeys, int numBuckets, Configuration properties, Configuration customProperties);

    /** The implementation named by the system property flussgolden.adapter. */
    static FlussAdapter load() {
        String name = System.getProperty("flussgolden.adapter");
        if (name == null) {
            throw new IllegalStateException("set -Dflussgolden.adapter=FlussAdapter09 or FlussAdapter10");
        }
        try {
            return (FlussAdapter) Class.forName(name).getDeclaredConstructor().newInstance();
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("adapter " + name + " was not compiled with this jar", e);
        }
    }
}
