import pytest, time
pytestmark = pytest.mark.s3
def test_meta(s3):
    b = s3.bucket("probe")
    up = s3.upload_filesystem()
    with up.open_output_stream(f"{b}/x.bin") as o: o.write(b"hello")
    fs = s3.filesystem()
    f = fs.open_input_file(f"{b}/x.bin")
    print(dict(f.metadata()))
    print(fs.get_file_info(f"{b}/x.bin").mtime_ns)
    with up.open_output_stream(f"{b}/x.bin") as o: o.write(b"hellp")
    f2 = fs.open_input_file(f"{b}/x.bin")
    print(dict(f2.metadata()))
    print(f.read())
    assert 0
