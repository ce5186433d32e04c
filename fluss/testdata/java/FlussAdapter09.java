/* FlussAdapter for the fluss-server 0.9.1-incubating jar (see FlussAdapter.java). */

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

final class FlussAdapter09 implements FlussAdapter {

    public String line() {
        return "0.9";
    }

    public MemoryLogRecordsArrowBuilder appendOnlyArrowBuilder(int schemaId, ArrowWriter writer,
            AbstractPagedOutputView out) {
        return MemoryLogRecordsArrowBuilder.builder(schemaId, writer, out, true);
    }

    public boolean columnStatistics() {
        return false; // they came with 1.0
    }

    public MemoryLogRecordsArrowBuilder statisticsArrowBuilder(RowType rowType, int schemaId, ArrowWriter writer,
            AbstractPagedOutputView out) {
        throw new UnsupportedOperationException("Fluss 0.9 has no column statistics");
    }

    public LogRecordReadContext compactedReadContext(RowType rowType, int schemaId, SchemaGetter schemas) {
        // 0.9 decodes COMPACTED rows with the batch's schema only
        return LogRecordReadContext.createCompactedRowReadContext(rowType, schemaId);
    }

    public TableInfo tableInfo(TablePath path, long tableId, int schemaId, Schema schema, List<String> bucketKeys,
            List<String> partitionKeys, int numBuckets, Configuration properties, Configuration customProperties) {
        return new TableInfo(path, tableId, schemaId, schema, bucketKeys, partitionKeys, numBuckets, properties,
                customProperties, null, 0, 0);
    }
}
