//! A moto server on loopback: a real S3-protocol server for the remote knowledge source tests,
//! with request signatures checked, an IAM user whose keys the tests use, and objects put through
//! boto3. Stopped when dropped.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

/// A running moto server (see the module documentation).
#[derive(Debug)]
pub struct Moto {
    child: std::process::Child,
    python: String,
    /// Its base URL (`http://127.0.0.1:<port>`).
    pub url: String,
    /// The access key id of its IAM user.
    pub key: String,
    /// That user's secret.
    pub secret: String,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Moto {
    /// Starts moto with `python` (the venv of [`crate::moto_python`]) on a free port: the first
    /// three calls (making the IAM user and its policy) need no signature, every later one is
    /// checked (a wrong secret is `SignatureDoesNotMatch`).
    ///
    /// # Panics
    /// When moto does not start within 30 s or the user cannot be made.
    pub fn start(python: &str) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = std::process::Command::new(python)
            .args(["-m", "moto.server", "-H", "127.0.0.1", "-p", &port.to_string()])
            .env("INITIAL_NO_AUTH_ACTION_COUNT", "3")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let url = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "moto did not start on {port}");
            std::thread::sleep(Duration::from_millis(100));
        }
        let script = format!(
            "import boto3, json\niam = boto3.client('iam', endpoint_url='{url}', aws_access_key_id='x', \
             aws_secret_access_key='x', region_name='us-east-1')\niam.create_user(UserName='kb')\n\
             k = iam.create_access_key(UserName='kb')['AccessKey']\n\
             iam.put_user_policy(UserName='kb', PolicyName='all', PolicyDocument=json.dumps({{'Version': \
             '2012-10-17', 'Statement': [{{'Effect': 'Allow', 'Action': '*', 'Resource': '*'}}]}}))\n\
             print(json.dumps([k['AccessKeyId'], k['SecretAccessKey']]))"
        );
        let out = std::process::Command::new(python).arg("-c").arg(script).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let keys: Vec<String> = serde_json::from_slice(&out.stdout).unwrap();
        Self { child, python: python.to_owned(), url, key: keys[0].clone(), secret: keys[1].clone() }
    }

    /// Runs `code` with `s3`, a boto3 client signed with the user's keys; its standard output.
    ///
    /// # Panics
    /// When the script fails.
    pub fn boto(&self, code: &str) -> String {
        let script = format!(
            "import boto3\ns3 = boto3.client('s3', endpoint_url='{}', aws_access_key_id='{}', \
             aws_secret_access_key='{}', region_name='us-east-1')\n{code}",
            self.url, self.key, self.secret
        );
        let out = std::process::Command::new(&self.python).arg("-c").arg(script).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Makes bucket `bucket`.
    pub fn create_bucket(&self, bucket: &str) {
        self.boto(&format!("s3.create_bucket(Bucket={bucket:?})"));
    }

    /// Puts `body` at `key` of `bucket`.
    pub fn put(&self, bucket: &str, key: &str, body: &str) {
        let file = std::env::temp_dir().join(format!("agno-moto-{}", agno_core::new_id()));
        std::fs::write(&file, body).unwrap();
        let path = file.display().to_string();
        self.boto(&format!("s3.put_object(Bucket={bucket:?}, Key={key:?}, Body=open({path:?}, 'rb').read())"));
        let _ = std::fs::remove_file(file);
    }

    /// The `[[knowledge.sources]]` table of source `id` on `bucket` of this server, signed with
    /// `secret` (the user's, or a wrong one).
    pub fn source_toml(&self, id: &str, bucket: &str, secret: &str) -> String {
        format!(
            "[[knowledge.sources]]\nid = \"{id}\"\nname = \"{id} source\"\nbucket = \"{bucket}\"\nendpoint = \"{}\"\n\
             aws_access_key_id = \"{}\"\naws_secret_access_key = \"{secret}\"\nmetadata = {{ team = \"kb\" }}\n",
            self.url, self.key
        )
    }
}
