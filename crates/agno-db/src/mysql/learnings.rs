//! DDL of the MySQL learnings table (Agno's MySQLDb keeps none: its columns as the other
//! databases have them, with bounded keys).

pub(crate) fn learnings_ddl(t: &str) -> Vec<String> {
    let cols = "\n\tlearning_id VARCHAR(255) NOT NULL, \n\tlearning_type VARCHAR(128) NOT NULL, \n\tnamespace VARCHAR(255), \n\tuser_id VARCHAR(255), \n\tagent_id VARCHAR(255), \n\tteam_id VARCHAR(255), \n\tworkflow_id VARCHAR(255), \n\tsession_id VARCHAR(255), \n\tentity_id VARCHAR(255), \n\tentity_type VARCHAR(128), \n\tcontent JSON NOT NULL, \n\tmetadata JSON, \n\tcreated_at BIGINT NOT NULL, \n\tupdated_at BIGINT, \n\tPRIMARY KEY (learning_id)\n";
    let mut ddl = vec![format!("CREATE TABLE IF NOT EXISTS `{t}` ({cols})")];
    // MySQL has no CREATE INDEX IF NOT EXISTS: the indexes go with the table.
    let indexes: Vec<String> = crate::sql::learnings::indexed().map(|c| format!("INDEX `idx_{t}_{c}` ({c})")).collect();
    ddl[0] = ddl[0].replacen(
        "PRIMARY KEY (learning_id)\n",
        &format!("PRIMARY KEY (learning_id), \n\t{}\n", indexes.join(", \n\t")),
        1,
    );
    ddl
}
